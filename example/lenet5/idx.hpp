#pragma once
/// \file
/// Reader for the IDX files of MNIST (and Fashion-MNIST, EMNIST, ...): a 4-byte magic
/// `0 0 type ndim`, then `ndim` big-endian 32-bit dimensions, then the data. Only unsigned bytes
/// (type 0x08) are read, which is what the image and label files hold. Every check names the
/// file: a missing file, a wrong magic, unexpected dimensions, dimensions whose product
/// overflows, and a file whose length differs from what its header promises ("truncated:
/// expected N bytes, found M", "trailing bytes: ...").

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ios>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace lenet5 {

/// What a bad data file gives: the message names the file and what was wrong with it.
///
///     try { auto d = lenet5::load_mnist("data/mnist"); }
///     catch (lenet5::idx_error const& e) { std::cerr << e.what() << '\n'; }
class idx_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An IDX array of unsigned bytes: its dimensions and its data, row-major.
///
///     auto labels = lenet5::read_idx("data/mnist/t10k-labels-idx1-ubyte", 1);
///     // labels.dims == {10000}, labels.data.size() == 10000
struct idx_array {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;
};

/// Reads an IDX file of unsigned bytes with `ndim` dimensions (1..255); throws `idx_error`
/// naming the file if it is missing, has another magic, dimensions whose product overflows, or
/// a length other than the header's plus the product of its dimensions.
inline idx_array read_idx(std::filesystem::path const& file, int ndim) {
  std::string const name = file.string();
  if (ndim < 1 || ndim > 255)
    throw std::invalid_argument("read_idx(" + name + "): an IDX file has 1 to 255 dimensions, " +
                                std::to_string(ndim) + " asked");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw idx_error(name +
                    ": no such file (get MNIST with tools/fetch-mnist.sh, or pass --data DIR)");
  auto const actual = std::filesystem::file_size(file, ec);
  if (ec) throw idx_error(name + ": cannot read its size: " + ec.message());
  std::ifstream in(file, std::ios::binary);
  if (!in) throw idx_error(name + ": cannot open");

  if (actual < 4)
    throw idx_error(name + ": truncated: expected at least 4 bytes of magic, found " +
                    std::to_string(actual) + " bytes");
  unsigned char magic[4];
  in.read(reinterpret_cast<char*>(magic), 4);
  std::uint32_t const want = 0x0800u | static_cast<std::uint32_t>(ndim);
  std::uint32_t const got = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                            (std::uint32_t{magic[2]} << 8) | magic[3];
  if (got != want) {
    char buf[128];
    std::snprintf(buf, sizeof buf,
                  ": wrong magic 0x%08X, expected 0x%08X (IDX, unsigned bytes, %d dimension%s)",
                  got, want, ndim, ndim == 1 ? "" : "s");
    throw idx_error(name + buf);
  }
  auto const header = 4 + 4 * static_cast<std::uintmax_t>(ndim);
  if (actual < header)
    throw idx_error(name + ": truncated: expected at least " + std::to_string(header) +
                    " bytes of header, found " + std::to_string(actual) + " bytes");
  idx_array a;
  for (int i = 0; i < ndim; ++i) {
    unsigned char d[4];
    in.read(reinterpret_cast<char*>(d), 4);
    a.dims.push_back((std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) |
                     (std::uint32_t{d[2]} << 8) | d[3]);
  }
  std::string shape;
  for (auto d : a.dims) shape += (shape.empty() ? "" : " x ") + std::to_string(d);
  // Every product is checked: unchecked, dimensions 2^22 x 2^21 x 2^21 multiply to 2^64, which
  // wraps to 0 and would pass a bare 16-byte header for 4,194,304 images of no pixels.
  constexpr auto most = std::numeric_limits<std::uintmax_t>::max();
  std::uintmax_t elements = 1;
  bool zero = false, overflow = false;
  for (auto d : a.dims) {
    if (d == 0)
      zero = true;
    else if (elements > most / d)
      overflow = true;
    else
      elements *= d;
  }
  if (zero) elements = 0;
  if (!zero && (overflow || elements > most - header))
    throw idx_error(name + ": dimensions " + shape +
                    " describe more bytes than any file can hold (with the " +
                    std::to_string(header) + "-byte header, more than 2^" +
                    std::to_string(std::numeric_limits<std::uintmax_t>::digits) +
                    " - 1: the product overflows)");
  std::uintmax_t const expected = header + elements;
  if (actual != expected)
    throw idx_error(name + (actual < expected ? ": truncated" : ": trailing bytes") +
                    ": expected " + std::to_string(expected) + " bytes, found " +
                    std::to_string(actual) + " bytes (" + std::to_string(header) +
                    " of header, then " + shape + " of data)");
  // Equal to the file's size, so it fits memory's and the stream's counts on any system where
  // the file could be read; checked all the same for 32-bit size_t.
  if (elements > std::numeric_limits<std::size_t>::max() ||
      elements > static_cast<std::uintmax_t>(std::numeric_limits<std::streamsize>::max()))
    throw idx_error(name + ": dimensions " + shape + " hold " + std::to_string(elements) +
                    " bytes, more than this system can address");
  a.data.resize(static_cast<std::size_t>(elements));
  in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(elements));
  if (!in) throw idx_error(name + ": read failed after the header");
  return a;
}

/// A labelled image set: `count` images of `rows` x `cols` bytes, and one label (0..9) each.
struct image_set {
  std::size_t count = 0, rows = 0, cols = 0;
  std::vector<std::uint8_t> pixels;  ///< count * rows * cols, image-major
  std::vector<std::uint8_t> labels;  ///< count
};

/// Reads an images file and its labels file, and checks that they agree (same count, labels
/// below `classes`).
///
///     auto test = lenet5::read_image_set(dir / "t10k-images-idx3-ubyte",
///                                        dir / "t10k-labels-idx1-ubyte");
inline image_set read_image_set(std::filesystem::path const& images,
                                std::filesystem::path const& labels, int classes = 10) {
  auto im = read_idx(images, 3);
  auto lb = read_idx(labels, 1);
  if (im.dims[0] != lb.dims[0])
    throw idx_error(images.string() + " holds " + std::to_string(im.dims[0]) + " images but " +
                    labels.string() + " holds " + std::to_string(lb.dims[0]) + " labels");
  for (std::size_t i = 0; i < lb.data.size(); ++i)
    if (lb.data[i] >= classes)
      throw idx_error(labels.string() + ": label " + std::to_string(lb.data[i]) + " at index " +
                      std::to_string(i) + " is not below " + std::to_string(classes));
  image_set s;
  s.count = im.dims[0];
  s.rows = im.dims[1];
  s.cols = im.dims[2];
  s.pixels = std::move(im.data);
  s.labels = std::move(lb.data);
  return s;
}

/// MNIST's train and test sets from a directory holding the four standard file names.
struct mnist {
  image_set train, test;
};

/// Loads `dir`/{train,t10k}-{images-idx3,labels-idx1}-ubyte; images must be 28 x 28.
///
///     auto data = lenet5::load_mnist("data/mnist");
inline mnist load_mnist(std::filesystem::path const& dir) {
  mnist m{read_image_set(dir / "train-images-idx3-ubyte", dir / "train-labels-idx1-ubyte"),
          read_image_set(dir / "t10k-images-idx3-ubyte", dir / "t10k-labels-idx1-ubyte")};
  for (auto const* s : {&m.train, &m.test})
    if (s->rows != 28 || s->cols != 28)
      throw idx_error(
          (dir / (s == &m.train ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte")).string() +
          ": images are " + std::to_string(s->rows) + " x " + std::to_string(s->cols) +
          ", LeNet-5 here expects 28 x 28");
  return m;
}

}  // namespace lenet5
