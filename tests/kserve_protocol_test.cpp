// The Open Inference Protocol v2 parser and encoder (serve/kserve/protocol.hpp) against the
// specifications' own examples (tests/data/kserve, see SOURCE.md) and hostile requests.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "serve/kserve/protocol.hpp"

namespace tessera {
namespace {

using nlohmann::json;

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/tests/data/kserve/" + name,
                   std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string out;
  for (T v : values) out.append(reinterpret_cast<const char*>(&v), sizeof v);
  return out;
}

std::string error_of(std::string_view body, std::optional<std::string> header = std::nullopt,
                     ProtocolLimits limits = {}) {
  try {
    parse_infer_request(body, header, limits);
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "";
}

TEST(KServeProtocol, SpecJsonRequestExampleIsReadAndItsShapeDefectNamed) {
  const std::string example = read_data("infer_request.json");
  // As published, input1 has shape [3] and one value: refused, naming the input.
  EXPECT_EQ(error_of(example), "inputs[1] ('input1'): data holds 1 values; shape [3] needs 3");
  // With the shape it implies ([1]) every field is read as the spec describes.
  std::string fixed = example;
  fixed.replace(fixed.find("[ 3 ]"), 5, "[ 1 ]");
  const InferRequest r = parse_infer_request(fixed, std::nullopt);
  ASSERT_TRUE(r.id);
  EXPECT_EQ(*r.id, "42");
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].name, "input0");
  EXPECT_EQ(r.inputs[0].datatype, DataType::kUint32);
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.inputs[0].values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(r.inputs[1].datatype, DataType::kBool);
  EXPECT_EQ(r.inputs[1].values, (std::vector<double>{1}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].name, "output0");
  EXPECT_FALSE(r.outputs[0].binary);
}

TEST(KServeProtocol, SpecJsonResponseExampleIsWhatTheEncoderWrites) {
  std::string example = read_data("infer_response.json");
  // As published it lacks a comma after "id" (SOURCE.md).
  EXPECT_TRUE(json::parse(example, nullptr, false).is_discarded());
  example.insert(example.find("\"42\"") + 4, ",");
  InferResponseHead head;
  head.id = "42";
  const EncodedResponse r =
      encode_infer_response(head, {{"output0", {3, 2}, {1.0f, 1.1f, 2.0f, 2.1f, 3.0f, 3.1f}}});
  EXPECT_FALSE(r.header_length);
  EXPECT_EQ(json::parse(r.body), json::parse(example));
  // FP32 values are written in their shortest exact form: 1.1f is "1.1", not 1.100000023841858.
  EXPECT_NE(r.body.find("[1,1.1,2,2.1,3,3.1]"), std::string::npos) << r.body;
}

TEST(KServeProtocol, SpecBinaryRequestExampleIsReadByteForByte) {
  const std::string header = read_data("binary_request.json");
  const std::string body = header + bytes_of<uint32_t>({1, 2, 3, 4}) + bytes_of<uint8_t>({1, 0, 1});
  ASSERT_EQ(body.size(), header.size() + 19);  // "the total size of the binary data is 19 bytes"
  const InferRequest r = parse_infer_request(body, std::to_string(header.size()));
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_TRUE(r.inputs[0].binary);
  EXPECT_EQ(r.inputs[0].values, (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(r.inputs[1].datatype, DataType::kBool);
  EXPECT_EQ(r.inputs[1].values, (std::vector<double>{1, 0, 1}));
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].binary);
}

TEST(KServeProtocol, SpecBinaryResponseExampleIsWhatTheEncoderWrites) {
  const std::vector<float> data{1.0f, 1.1f, 2.0f, 2.1f, 3.0f, 3.1f};
  const EncodedResponse r = encode_infer_response({}, {{"output0", {3, 2}, data, true}});
  ASSERT_TRUE(r.header_length);
  const std::size_t n = *r.header_length;
  EXPECT_EQ(r.body.size(), n + 24);  // "Content-Length: <yy+24>"
  EXPECT_EQ(json::parse(r.body.substr(0, n)), json::parse(read_data("binary_response.json")));
  EXPECT_EQ(std::memcmp(r.body.data() + n, data.data(), 24), 0);
}

TEST(KServeProtocol, EveryDatatypeInJsonWithItsRange) {
  const auto body = [](const std::string& type, const std::string& data, int n = 2) {
    return R"({"inputs":[{"name":"x","datatype":")" + type + R"(","shape":[)" + std::to_string(n) +
           R"(],"data":)" + data + "}]}";
  };
  struct Case {
    const char* type;
    const char* ok;
    const char* bad;
  };
  const Case cases[] = {
      {"BOOL", "[true,false]", "[1,0]"},
      {"UINT8", "[0,255]", "[0,256]"},
      {"UINT16", "[0,65535]", "[-1,0]"},
      {"UINT32", "[0,4294967295]", "[0,4294967296]"},
      {"UINT64", "[0,18446744073709551615]", "[0,-1]"},
      {"INT8", "[-128,127]", "[-129,0]"},
      {"INT16", "[-32768,32767]", "[0,32768]"},
      {"INT32", "[-2147483648,2147483647]", "[0,2147483648]"},
      {"INT64", "[-9223372036854775808,9223372036854775807]", "[0.5,1]"},
      {"FP16", "[-65504,0.5]", "[65520,0]"},
      {"FP32", "[1.5,-3e38]", "[1,4e38]"},
      {"FP64", "[1e300,-1e-300]", "[1,\"a\"]"},
      {"BYTES", R"(["ab",""])", "[1,2]"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_of(body(c.type, c.ok)), "") << c.type;
    const std::string e = error_of(body(c.type, c.bad));
    EXPECT_NE(e.find("inputs[0] ('x')"), std::string::npos) << c.type << ": " << e;
  }
  const InferRequest r = parse_infer_request(body("BYTES", R"(["ab",""])"), std::nullopt);
  EXPECT_EQ(r.inputs[0].bytes, (std::vector<std::string>{"ab", ""}));
  EXPECT_EQ(error_of(body("UINT8", "[0,256]")),
            "inputs[0] ('x'): data[1] = 256 is not an integer in 0..255 (UINT8)");
  EXPECT_NE(error_of(body("FP33", "[1,2]")).find("'FP33' is not one of BOOL"), std::string::npos);
}

TEST(KServeProtocol, EveryDatatypeInBinary) {
  const auto parse = [](const std::string& type, int n, const std::string& data) {
    const std::string head = R"({"inputs":[{"name":"x","datatype":")" + type + R"(","shape":[)" +
                             std::to_string(n) + R"(],"parameters":{"binary_data_size":)" +
                             std::to_string(data.size()) + "}}]}";
    return parse_infer_request(head + data, std::to_string(head.size()));
  };
  EXPECT_EQ(parse("INT16", 2, bytes_of<int16_t>({-5, 7})).inputs[0].values,
            (std::vector<double>{-5, 7}));
  EXPECT_EQ(parse("UINT64", 1, bytes_of<uint64_t>({1ull << 40})).inputs[0].values,
            (std::vector<double>{1099511627776.0}));
  EXPECT_EQ(parse("FP64", 2, bytes_of<double>({0.25, -2})).inputs[0].values,
            (std::vector<double>{0.25, -2}));
  // FP16 1.0 = 0x3C00, -2.5 = 0xC100, 65504 = 0x7BFF.
  EXPECT_EQ(parse("FP16", 3, bytes_of<uint16_t>({0x3C00, 0xC100, 0x7BFF})).inputs[0].values,
            (std::vector<double>{1.0, -2.5, 65504.0}));
  std::string strings = bytes_of<uint32_t>({2}) + "hi" + bytes_of<uint32_t>({0});
  EXPECT_EQ(parse("BYTES", 2, strings).inputs[0].bytes, (std::vector<std::string>{"hi", ""}));
  // A BOOL byte other than 0 / 1, an FP32 NaN, and FP16 infinity are refused.
  EXPECT_THROW(parse("BOOL", 1, bytes_of<uint8_t>({2})), ProtocolError);
  EXPECT_THROW(parse("FP32", 1, bytes_of<float>({NAN})), ProtocolError);
  EXPECT_THROW(parse("FP16", 1, bytes_of<uint16_t>({0x7C00})), ProtocolError);
}

TEST(KServeProtocol, HostileRequestsGetClearErrorsAndBoundedMemory) {
  const std::string one = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2],)"
                          R"("parameters":{"binary_data_size":8}}]})";
  const std::string eight = bytes_of<float>({1, 2});
  const std::string hl = std::to_string(one.size());
  EXPECT_EQ(error_of(one + eight, hl), "");
  // Lying header lengths.
  EXPECT_EQ(error_of(one + eight, std::to_string(one.size() + 9)),
            "Inference-Header-Content-Length " + std::to_string(one.size() + 9) +
                " is larger than the body (" + std::to_string(one.size() + 8) + " bytes)");
  EXPECT_NE(error_of(one + eight, "12abc").find("is not a byte count"), std::string::npos);
  EXPECT_NE(error_of(one + eight, "-1").find("is not a byte count"), std::string::npos);
  EXPECT_NE(error_of(one + eight, std::to_string(one.size() - 3)).find("invalid JSON"),
            std::string::npos);
  // Truncated binary, extra binary, binary without the header.
  EXPECT_EQ(error_of(one + eight.substr(0, 5), hl),
            "inputs[0] ('x'): truncated binary data: binary_data_size 8 but only 5 bytes follow");
  EXPECT_EQ(error_of(one + eight + "zz", hl),
            "2 bytes of binary data follow the JSON that no input's binary_data_size claims");
  EXPECT_NE(error_of(one).find("no Inference-Header-Content-Length"), std::string::npos);
  // Shape x datatype mismatch.
  std::string wrong = one;
  wrong.replace(wrong.find("FP32"), 4, "FP64");
  EXPECT_EQ(error_of(wrong + eight, hl),
            "inputs[0] ('x'): binary_data_size 8 does not match shape [2] of FP64 (16 bytes)");
  // Huge shapes are refused before anything is allocated, whatever the product.
  ProtocolLimits small;
  small.max_values = 1000;
  EXPECT_NE(
      error_of(
          R"({"inputs":[{"name":"x","datatype":"FP32","shape":[4294967296,4294967296,16],"data":[]}]})",
          std::nullopt, small)
          .find("holds more than 1000 elements"),
      std::string::npos);
  EXPECT_NE(error_of(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[-1],"data":[]}]})")
                .find("shape dimension -1"),
            std::string::npos);
  // Values beyond the limit stop the parse at the limit (memory stays bounded).
  std::string many = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[2000],"data":[)";
  for (int i = 0; i < 2000; ++i) many += i ? ",1" : "1";
  many += "]}]}";
  EXPECT_NE(error_of(many, std::nullopt, small).find("more than 1000 tensor elements"),
            std::string::npos);
  // Structure errors name the field.
  EXPECT_EQ(
      error_of(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"data":[2]}]})"),
      "inputs[0]: duplicate key 'data'");
  EXPECT_EQ(error_of(R"({"inputs":[],"parameters":{"a":[1]}})"),
            "parameter 'a' must be a string, number or boolean");
  EXPECT_EQ(error_of(R"({"inputs":[],"outputs":[{"name":"o","parameters":{"binary_data":1}}]})"),
            "outputs[0]: binary_data must be a boolean");
  EXPECT_EQ(error_of(R"({"outputs":[]})"), "'inputs' is missing");
  EXPECT_EQ(error_of("[1]"), "the request must be a JSON object");
}

TEST(KServeProtocol, ParametersAndBinaryOutputFlags) {
  const InferRequest r = parse_infer_request(
      R"({"inputs":[],"parameters":{"slo_ms":50,"binary_data_output":true,"tag":"a"},)"
      R"("outputs":[{"name":"a"},{"name":"b","parameters":{"binary_data":false}}]})",
      std::nullopt);
  EXPECT_DOUBLE_EQ(r.slo_s, 0.05);
  EXPECT_EQ(r.parameters["tag"], "a");
  EXPECT_TRUE(r.outputs[0].binary);   // the request's binary_data_output
  EXPECT_FALSE(r.outputs[1].binary);  // overridden on the output
}

}  // namespace
}  // namespace tessera
