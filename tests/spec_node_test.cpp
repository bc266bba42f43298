#include "core/spec_node.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

TEST(SpecNode, AssigningACopyRebindsItAndLeavesTheOriginalAlone) {
  // yaml-cpp's Node assignment writes into the node it refers to; a SpecNode's rebinds.
  const SpecNode doc = SpecNode::load_string("workload: {rate: 5}\nother: {rate: 9}\n", "run.yaml");
  const SpecNode original = doc.at("workload");
  SpecNode copy = original;
  copy = doc.at("other");
  EXPECT_EQ(copy.at("rate").as_integer(), 9);
  EXPECT_EQ(original.at("rate").as_integer(), 5);
  EXPECT_EQ(doc.at("workload").at("rate").as_integer(), 5);
  SpecNode moved = original;
  moved = SpecNode::load_string("rate: 7\n", "b.yaml");
  EXPECT_EQ(moved.at("rate").as_integer(), 7);
  EXPECT_EQ(moved.file(), "b.yaml");
  EXPECT_EQ(original.at("rate").as_integer(), 5);
}

TEST(SpecNode, UnknownFieldNamesFileAndPath) {
  auto root = SpecNode::load_string("tasks:\n  - name: a\n    colour: red\n", "app.yaml");
  auto task = root.at("tasks").items()[0];
  try {
    task.allow_only({"name", "variants"});
    FAIL() << "expected a SpecError";
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "app.yaml");
    EXPECT_EQ(e.field(), "tasks[0].colour");
    EXPECT_NE(std::string(e.what()).find("unknown field"), std::string::npos);
  }
}

TEST(SpecNode, TypeAndRangeErrors) {
  auto root = SpecNode::load_string("slo_ms: fast\nacc: 1.5\n", "x.yaml");
  EXPECT_THROW(root.at("slo_ms").as_number(), SpecError);
  EXPECT_THROW(root.at("acc").as_number_in(0, 1), SpecError);
  try {
    root.at("missing");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.field(), "missing");
    EXPECT_NE(std::string(e.what()).find("required"), std::string::npos);
  }
}

TEST(SpecNode, SyntaxErrorNamesLine) {
  try {
    SpecNode::load_string("a: [1, 2\nb: 3\n", "bad.yaml");
    FAIL();
  } catch (const SpecError& e) {
    EXPECT_EQ(e.file(), "bad.yaml");
    EXPECT_NE(std::string(e.what()).find("invalid YAML"), std::string::npos);
  }
}

}  // namespace
}  // namespace tessera
