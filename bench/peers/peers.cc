// The peers compiled into this binary. Always compiled; the peers themselves
// only when CMake found them (ACTGRAD_WITH_TORCH, ACTGRAD_WITH_DNNL).
#include "peers/peer.h"
#include "peers/peers_internal.h"

namespace actgrad::peers {

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = step;
    step *= dims[i];
  }
  return s;
}

std::vector<std::unique_ptr<Peer>> AvailablePeers() {
  std::vector<std::unique_ptr<Peer>> peers;
#ifdef ACTGRAD_HAVE_TORCH
  peers.push_back(MakeTorchPeer());
#endif
#ifdef ACTGRAD_HAVE_DNNL
  peers.push_back(MakeDnnlPeer());
#endif
  return peers;
}

std::string PeerVersions() {
  std::string s;
#ifdef ACTGRAD_HAVE_TORCH
  s += "torch " + TorchVersion();
#endif
#ifdef ACTGRAD_HAVE_DNNL
  if (!s.empty()) s += ", ";
  s += "dnnl " + DnnlVersion();
#endif
  return s.empty() ? "none" : s;
}

}  // namespace actgrad::peers
