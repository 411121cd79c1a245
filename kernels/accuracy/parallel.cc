#include "accuracy/parallel.h"

#include <pthread.h>

#include <atomic>
#include <vector>

namespace actgrad::acc {

namespace {
struct Shared {
  std::atomic<size_t> next{0};
  size_t count = 0;
  const std::function<void(size_t)>* fn = nullptr;
  void Work() {
    for (size_t i; (i = next.fetch_add(1)) < count;) (*fn)(i);
  }
};
void* Entry(void* p) {
  static_cast<Shared*>(p)->Work();
  return nullptr;
}
}  // namespace

void ParallelFor(int threads, size_t count, const std::function<void(size_t)>& fn) {
  Shared s;
  s.count = count;
  s.fn = &fn;
  std::vector<pthread_t> ids;
  if (threads > 1 && count > 1) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t{256} << 20);
    for (int t = 1; t < threads && size_t(t) < count; ++t) {
      pthread_t id;
      if (pthread_create(&id, &attr, Entry, &s) == 0) ids.push_back(id);  // on failure: fewer workers
    }
    pthread_attr_destroy(&attr);
  }
  s.Work();
  for (pthread_t id : ids) pthread_join(id, nullptr);
}

}  // namespace actgrad::acc
