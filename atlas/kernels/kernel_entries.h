// Host-side declarations of the AscendC kernel entry points (emulator build).
#pragma once
#include <cstdint>

extern "C" {
void selu_grad_custom(uint8_t* dy, uint8_t* y, uint8_t* dx, uint8_t* workspace, uint8_t* tiling);
void hardswish_grad_custom(uint8_t* dy, uint8_t* x, uint8_t* dx, uint8_t* workspace, uint8_t* tiling);
void gelu_grad_custom(uint8_t* dy, uint8_t* x, uint8_t* dx, uint8_t* workspace, uint8_t* tiling);
void softshrink_grad_custom(uint8_t* dy, uint8_t* x, uint8_t* dx, uint8_t* workspace, uint8_t* tiling);
void logit_grad_custom(uint8_t* x, uint8_t* dy, uint8_t* dx, uint8_t* workspace, uint8_t* tiling);
}
