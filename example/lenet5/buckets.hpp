#pragma once
/// \file
/// Gradient buckets, as PyTorch DDP forms them (its `bucket_cap_mb`): the layers, taken in
/// reverse order (the order the backward pass finishes them), are packed into buckets of at most
/// `cap_bytes`, a layer never split; a layer larger than the cap is a bucket of its own. Each
/// bucket is then one all_reduce, which `--sync grads --overlap` starts as soon as the backward
/// pass has finished the bucket's last layer.
///
///     auto b = lenet5::make_buckets(lenet5::network<float>::layer_parameters, 64 * 1024,
///                                   sizeof(float));
///     // LeNet-5, 64 KiB: {F7, F6}, {F5} (188 KiB alone), {C3, C1}

#include <cstddef>
#include <span>
#include <vector>

namespace lenet5 {

/// Layers `first` to `last` (forward indices, first <= last): the contiguous slice of
/// `count` elements from `offset` of the gradient arena.
struct bucket {
  std::size_t first = 0, last = 0;
  std::size_t offset = 0, count = 0;
  friend bool operator==(bucket const&, bucket const&) = default;
};

/// The buckets of layers of `layer_sizes` elements (forward order, laid out one after the
/// other), each element `element_bytes` long, for a cap of `cap_bytes`: in reverse layer order,
/// a bucket takes the next layer while it still fits in the cap, and an empty bucket takes the
/// next layer whatever its size. Bucket 0 holds the last layer; bucket k is complete when the
/// backward pass has finished its layer `first`. A cap at least the size of all layers gives
/// one bucket.
inline std::vector<bucket> make_buckets(std::span<std::size_t const> layer_sizes,
                                        std::size_t cap_bytes, std::size_t element_bytes) {
  std::vector<bucket> out;
  std::size_t const cap = cap_bytes / element_bytes;  // elements
  std::size_t end = 0;                                // one past the last element of layer i
  for (std::size_t n : layer_sizes) end += n;
  for (std::size_t i = layer_sizes.size(); i-- > 0;) {
    std::size_t const n = layer_sizes[i];
    end -= n;  // now the offset of layer i
    if (!out.empty() && out.back().count + n <= cap) {
      out.back().first = i, out.back().offset = end, out.back().count += n;
    } else {
      out.push_back({.first = i, .last = i, .offset = end, .count = n});
    }
  }
  return out;
}

}  // namespace lenet5
