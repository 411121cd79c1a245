// Factories of the optional peers (compiled only when found at configure time).
#pragma once
#include <memory>
#include <string>

#include "peers/peer.h"

namespace actgrad::peers {
#ifdef ACTGRAD_HAVE_TORCH
std::unique_ptr<Peer> MakeTorchPeer();
std::string TorchVersion();
#endif
#ifdef ACTGRAD_HAVE_DNNL
std::unique_ptr<Peer> MakeDnnlPeer();
std::string DnnlVersion();
#endif
// "torch 1.13.1, dnnl 2.6.3 (omp runtime)" or "none".
std::string PeerVersions();
}  // namespace actgrad::peers
