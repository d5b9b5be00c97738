// The documented table of HALTPOOL_* variables is the one the tunables table
// generates (runtime/tunables.h), word for word, and the page names no
// variable the runtime does not read. To refresh the table after changing a
// tunable: ./bazelw run //tools:variables_table

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "runtime/tunables.h"

namespace haltpool {
namespace {

std::string g_doc_path;

constexpr char kBegin[] = "<!-- haltpool-variables:begin -->\n";
constexpr char kEnd[] = "<!-- haltpool-variables:end -->\n";

std::string ReadDoc() {
  std::ifstream in(g_doc_path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(VariablesTable, IsTheGeneratedOne) {
  const std::string doc = ReadDoc();
  ASSERT_FALSE(doc.empty()) << "cannot read " << g_doc_path;
  const size_t begin = doc.find(kBegin);
  const size_t end = doc.find(kEnd);
  ASSERT_NE(begin, std::string::npos) << "no " << kBegin << "in " << g_doc_path;
  ASSERT_NE(end, std::string::npos) << "no " << kEnd << "in " << g_doc_path;
  ASSERT_LT(begin, end);
  const size_t start = begin + sizeof(kBegin) - 1;
  EXPECT_EQ(doc.substr(start, end - start), VariablesMarkdownTable())
      << "regenerate it: ./bazelw run //tools:variables_table";
}

TEST(VariablesTable, NamesNoUnknownVariable) {
  std::string doc = ReadDoc();
  // The table of bad inputs names unknown variables on purpose.
  const size_t bad = doc.find("### Bad inputs");
  if (bad != std::string::npos) {
    const size_t next = doc.find("\n#", bad + 1);
    doc.erase(bad, next == std::string::npos ? next : next - bad);
  }
  const std::regex name("HALTPOOL_[A-Z_]+[A-Z]");
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), name);
       it != std::sregex_iterator(); ++it) {
    EXPECT_NE(FindTunable(it->str()), nullptr)
        << g_doc_path << " names " << it->str()
        << ", which the runtime does not read";
  }
}

}  // namespace
}  // namespace haltpool

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (argc > 1) haltpool::g_doc_path = argv[1];
  return RUN_ALL_TESTS();
}
