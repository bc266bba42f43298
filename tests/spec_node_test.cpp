#include "core/spec_node.hpp"

#include <gtest/gtest.h>

namespace tessera {
namespace {

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
