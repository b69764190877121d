// Tests of example/lenet5/idx.hpp: valid files, and the errors for missing, truncated, too
// long and wrong-magic files and for dimensions whose product overflows, each naming the file
// and the sizes or dimensions.
#define BOOST_TEST_MODULE lenet5_idx
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "idx.hpp"

namespace fs = std::filesystem;

namespace {

struct tmpdir {
  fs::path path =
      fs::temp_directory_path() / ("gcl_lenet5_idx_" + std::to_string(::getpid()) + "_" +
                                   std::to_string(reinterpret_cast<std::uintptr_t>(this)));
  tmpdir() { fs::create_directories(path); }
  ~tmpdir() { fs::remove_all(path); }
};

std::vector<std::uint8_t> idx_bytes(std::uint8_t type, std::vector<std::uint32_t> dims) {
  std::vector<std::uint8_t> b{0, 0, type, std::uint8_t(dims.size())};
  std::size_t n = 1;
  for (auto d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(std::uint8_t(d >> s));
    n *= d;
  }
  for (std::size_t i = 0; i < n; ++i) b.push_back(std::uint8_t(i * 7 % 10));
  return b;
}

void write(fs::path const& p, std::vector<std::uint8_t> const& b) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<char const*>(b.data()), b.size());
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (lenet5::idx_error const& e) {
    return e.what();
  }
  return "";
}

bool contains(std::string const& s, std::string const& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_CASE(reads_valid_files) {
  tmpdir d;
  write(d.path / "img", idx_bytes(8, {3, 2, 4}));
  write(d.path / "lab", idx_bytes(8, {3}));
  auto a = lenet5::read_idx(d.path / "img", 3);
  BOOST_TEST(a.dims == (std::vector<std::uint32_t>{3, 2, 4}), boost::test_tools::per_element());
  BOOST_TEST(a.data.size() == 24u);
  BOOST_TEST(a.data[5] == 5u);
  BOOST_TEST(a.data[23] == (23 * 7 % 10));
  auto s = lenet5::read_image_set(d.path / "img", d.path / "lab");
  BOOST_TEST(s.count == 3u);
  BOOST_TEST(s.rows == 2u);
  BOOST_TEST(s.cols == 4u);
  BOOST_TEST(s.labels[2] == 4u);
}

BOOST_AUTO_TEST_CASE(loads_an_mnist_directory) {
  tmpdir d;
  write(d.path / "train-images-idx3-ubyte", idx_bytes(8, {5, 28, 28}));
  write(d.path / "train-labels-idx1-ubyte", idx_bytes(8, {5}));
  write(d.path / "t10k-images-idx3-ubyte", idx_bytes(8, {2, 28, 28}));
  write(d.path / "t10k-labels-idx1-ubyte", idx_bytes(8, {2}));
  auto m = lenet5::load_mnist(d.path);
  BOOST_TEST(m.train.count == 5u);
  BOOST_TEST(m.test.count == 2u);
  BOOST_TEST(m.train.pixels.size() == 5u * 784);
}

BOOST_AUTO_TEST_CASE(truncated_file_names_file_and_sizes) {
  tmpdir d;
  auto b = idx_bytes(8, {4, 28, 28});  // 16 + 3136 bytes
  b.resize(b.size() - 100);
  write(d.path / "train-images-idx3-ubyte", b);
  auto const file = (d.path / "train-images-idx3-ubyte").string();
  auto e = error_of([&] { lenet5::read_idx(file, 3); });
  BOOST_TEST_MESSAGE(e);
  BOOST_TEST(contains(e, file));
  BOOST_TEST(contains(e, "truncated"));
  BOOST_TEST(contains(e, "expected 3152 bytes"));
  BOOST_TEST(contains(e, "found 3052 bytes"));
}

// A header alone, whose dimensions say more than it holds.
static std::vector<std::uint8_t> header_only(std::vector<std::uint32_t> dims) {
  std::vector<std::uint8_t> b{0, 0, 8, std::uint8_t(dims.size())};
  for (auto d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(std::uint8_t(d >> s));
  return b;
}

BOOST_AUTO_TEST_CASE(dimensions_whose_product_wraps_to_zero) {
  // 2^22 x 2^21 x 2^21 = 2^64, 0 modulo 2^64: unchecked, this 16-byte file passes for
  // 4,194,304 images of no pixels.
  tmpdir d;
  write(d.path / "x", header_only({1u << 22, 1u << 21, 1u << 21}));
  auto const file = (d.path / "x").string();
  auto e = error_of([&] { lenet5::read_idx(file, 3); });
  BOOST_TEST_MESSAGE(e);
  BOOST_TEST(contains(e, file + ": dimensions 4194304 x 2097152 x 2097152 describe more bytes "
                                "than any file can hold"),
             e);
  BOOST_TEST(contains(e, "overflows"), e);
  // Through read_image_set too: the label file matches the wrapped image count.
  write(d.path / "lab", idx_bytes(8, {0}));
  e = error_of([&] { lenet5::read_image_set(d.path / "x", d.path / "lab"); });
  BOOST_TEST(contains(e, file + ": dimensions 4194304 x 2097152 x 2097152"), e);
}

BOOST_AUTO_TEST_CASE(dimensions_that_overflow_with_the_header) {
  // 65535 x 42009217 x 6700417 = 2^64 - 1: the product fits, the 16-byte header does not.
  tmpdir d;
  write(d.path / "x", header_only({65535u, 42009217u, 6700417u}));
  auto e = error_of([&] { lenet5::read_idx(d.path / "x", 3); });
  BOOST_TEST(contains(e, (d.path / "x").string() + ": dimensions 65535 x 42009217 x 6700417 "
                                                   "describe more bytes than any file can hold"),
             e);
  // One more than fits, by a dimension that overflows only at the last product.
  write(d.path / "y", header_only({4294967295u, 4294967295u, 2u}));
  e = error_of([&] { lenet5::read_idx(d.path / "y", 3); });
  BOOST_TEST(contains(e, "dimensions 4294967295 x 4294967295 x 2 describe more bytes"), e);
}

BOOST_AUTO_TEST_CASE(a_zero_dimension_holds_no_data_even_after_huge_ones) {
  // The product is 0, not an overflow: a file of just the header is valid.
  tmpdir d;
  write(d.path / "x", header_only({4294967295u, 4294967295u, 0u}));
  auto a = lenet5::read_idx(d.path / "x", 3);
  BOOST_TEST(a.data.empty());
  BOOST_TEST(a.dims[1] == 4294967295u);
  auto b = header_only({4294967295u, 4294967295u, 0u});
  b.push_back(7);
  write(d.path / "y", b);
  auto e = error_of([&] { lenet5::read_idx(d.path / "y", 3); });
  BOOST_TEST(contains(e, "trailing bytes: expected 16 bytes, found 17 bytes"), e);
}

BOOST_AUTO_TEST_CASE(large_dimensions_with_too_little_data) {
  // No overflow, but the header promises far more than the file holds.
  tmpdir d;
  write(d.path / "x", header_only({60000u, 28u, 28u}));
  auto const file = (d.path / "x").string();
  auto e = error_of([&] { lenet5::read_idx(file, 3); });
  BOOST_TEST(contains(e, file + ": truncated: expected 47040016 bytes, found 16 bytes (16 of "
                                "header, then 60000 x 28 x 28 of data)"),
             e);
}

BOOST_AUTO_TEST_CASE(truncated_header) {
  tmpdir d;
  write(d.path / "x", {0, 0, 8, 3, 0, 0});
  auto e = error_of([&] { lenet5::read_idx(d.path / "x", 3); });
  BOOST_TEST(contains(e, (d.path / "x").string()));
  BOOST_TEST(contains(e, "expected at least 16 bytes"));
  BOOST_TEST(contains(e, "found 6 bytes"));
}

BOOST_AUTO_TEST_CASE(trailing_bytes) {
  tmpdir d;
  auto b = idx_bytes(8, {3});
  b.push_back(1);
  write(d.path / "x", b);
  auto e = error_of([&] { lenet5::read_idx(d.path / "x", 1); });
  BOOST_TEST(contains(e, (d.path / "x").string() + ": trailing bytes: expected 11 bytes, found "
                                                   "12 bytes (8 of header, then 3 of data)"),
             e);
}

BOOST_AUTO_TEST_CASE(wrong_magic) {
  tmpdir d;
  write(d.path / "x", idx_bytes(0x0D, {3}));  // floats, not unsigned bytes
  auto e = error_of([&] { lenet5::read_idx(d.path / "x", 1); });
  BOOST_TEST(contains(e, (d.path / "x").string()));
  BOOST_TEST(contains(e, "wrong magic 0x00000D01, expected 0x00000801"));
  write(d.path / "y", idx_bytes(8, {3}));  // labels where images are expected
  e = error_of([&] { lenet5::read_idx(d.path / "y", 3); });
  BOOST_TEST(contains(e, "wrong magic 0x00000801, expected 0x00000803"));
}

BOOST_AUTO_TEST_CASE(missing_file) {
  tmpdir d;
  auto e = error_of([&] { lenet5::load_mnist(d.path); });
  BOOST_TEST(contains(e, (d.path / "train-images-idx3-ubyte").string()));
  BOOST_TEST(contains(e, "no such file"));
}

BOOST_AUTO_TEST_CASE(counts_and_labels_must_agree) {
  tmpdir d;
  write(d.path / "img", idx_bytes(8, {3, 2, 2}));
  write(d.path / "lab", idx_bytes(8, {4}));
  auto e = error_of([&] { lenet5::read_image_set(d.path / "img", d.path / "lab"); });
  BOOST_TEST(contains(e, "holds 3 images but"));
  BOOST_TEST(contains(e, "holds 4 labels"));
  auto lab = idx_bytes(8, {3});
  lab.back() = 10;
  write(d.path / "lab", lab);
  e = error_of([&] { lenet5::read_image_set(d.path / "img", d.path / "lab"); });
  BOOST_TEST(contains(e, "label 10 at index 2 is not below 10"));
}

BOOST_AUTO_TEST_CASE(wrong_image_size) {
  tmpdir d;
  write(d.path / "train-images-idx3-ubyte", idx_bytes(8, {1, 32, 32}));
  write(d.path / "train-labels-idx1-ubyte", idx_bytes(8, {1}));
  write(d.path / "t10k-images-idx3-ubyte", idx_bytes(8, {1, 28, 28}));
  write(d.path / "t10k-labels-idx1-ubyte", idx_bytes(8, {1}));
  auto e = error_of([&] { lenet5::load_mnist(d.path); });
  BOOST_TEST(contains(e, "images are 32 x 32, LeNet-5 here expects 28 x 28"));
}
