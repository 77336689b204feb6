// docs/parameters.md against the parameter table it is generated from (host/core/params_doc.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "host/core/params.h"
#include "host/core/params_doc.h"

using namespace octwalk;

namespace {

const std::string kPagePath = std::string(OCTWALK_SOURCE_DIR) + "/docs/parameters.md";

std::string regenerate()
{
    return std::string("regenerate it from the repository root:\n  ") + kParameterReferenceCommand;
}

/// The committed page; false when it cannot be read.
bool readPage(std::string& text)
{
    std::ifstream in(kPagePath, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    text = s.str();
    return true;
}

std::vector<std::string> lines(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

/// "" when equal, else where the two first differ (line number and both lines).
std::string firstDifference(const std::string& committed, const std::string& generated)
{
    if (committed == generated) return "";
    const std::vector<std::string> a = lines(committed), b = lines(generated);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i)
    {
        const std::string left  = i < a.size() ? a[i] : "<end of file>";
        const std::string right = i < b.size() ? b[i] : "<end of file>";
        if (left != right)
        {
            return "first difference at line " + std::to_string(i + 1) + ":\n  committed: " + left +
                   "\n  generated: " + right;
        }
    }
    return "the pages differ in their line ends or final newline";
}

/// The default as the page's Default line starts it: the command line's value (--epsilon: the length) in
/// backquotes, or for a switch the member's value without it.
std::string shownDefault(const ParameterInfo& row)
{
    const Parameters defaults;
    if (std::holds_alternative<bool Parameters::*>(row.member))
    {
        return "`" + parameterText(row, defaults) + "` (without the switch)";
    }
    if (!std::holds_alternative<double Parameters::*>(row.member)) return "`" + parameterText(row, defaults) + "`";
    double value = defaults.*std::get<double Parameters::*>(row.member);
    std::ostringstream s;
    s.precision(12);
    s << (row.form == CliForm::Length ? std::sqrt(value) : value);
    return "`" + s.str() + "`";
}

} // namespace

TEST(ParamsDoc, PageMatchesTheTable)
{
    std::string committed;
    ASSERT_TRUE(readPage(committed)) << kPagePath << " cannot be read; " << regenerate();
    const std::string difference = firstDifference(committed, parameterReferenceMarkdown());
    EXPECT_TRUE(difference.empty()) << kPagePath
                                    << " is not what the parameter table (host/core/params.cpp) generates; "
                                    << difference << "\n"
                                    << regenerate();
}

TEST(ParamsDoc, EveryParameterIsOnThePage)
{
    std::string committed;
    ASSERT_TRUE(readPage(committed)) << kPagePath << " cannot be read; " << regenerate();
    const std::string generated = parameterReferenceMarkdown();
    for (const auto& [what, page] : {std::pair<const char*, const std::string&>{"generated", generated},
                                     std::pair<const char*, const std::string&>{"committed", committed}})
    {
        for (const ParameterInfo& row : parameterTable())
        {
            EXPECT_NE(page.find("### " + std::string(row.name) + "\n"), std::string::npos)
                << "the " << what << " page has no section for " << row.name << "; " << regenerate();
            EXPECT_NE(page.find("`" + std::string(row.name) + "`"), std::string::npos)
                << "the " << what << " page does not name " << row.name;
            EXPECT_NE(page.find("`--" + std::string(row.option)), std::string::npos)
                << "the " << what << " page does not show --" << row.option;
            if (row.alias)
            {
                EXPECT_NE(page.find("`--" + std::string(row.alias)), std::string::npos)
                    << "the " << what << " page does not show --" << row.alias;
            }
        }
    }
}

TEST(ParamsDoc, PageSaysItIsGeneratedAndHowToRegenerateIt)
{
    const std::string page = parameterReferenceMarkdown();
    EXPECT_NE(page.find("generated"), std::string::npos);
    EXPECT_NE(page.find(kParameterReferenceCommand), std::string::npos);
    EXPECT_EQ(page, parameterReferenceMarkdown()) << "two calls gave different pages";
    ASSERT_FALSE(page.empty());
    EXPECT_EQ(page.back(), '\n');
    EXPECT_NE(page.substr(page.size() - 2), "\n\n") << "the page ends in a blank line";
}

TEST(ParamsDoc, EachSectionShowsTheDefaultAndTheValidValues)
{
    const std::string page = parameterReferenceMarkdown();
    for (const ParameterInfo& row : parameterTable())
    {
        const size_t start = page.find("### " + std::string(row.name) + "\n");
        ASSERT_NE(start, std::string::npos) << row.name;
        const size_t end           = page.find("\n### ", start + 1);
        const std::string section  = page.substr(start, end == std::string::npos ? std::string::npos : end - start);
        const std::string expected = "- Default: " + shownDefault(row);
        EXPECT_NE(section.find(expected), std::string::npos) << "expected '" << expected << "' in\n" << section;
        std::string range = rangeText(row).substr(std::string("must be ").size());
        EXPECT_NE(section.find("- Valid values: "), std::string::npos) << section;
        // The range as validate() words it, read with the page's Markdown escapes ("(0, 1\\]") taken out.
        std::string plain = section;
        plain.erase(std::remove(plain.begin(), plain.end(), '\\'), plain.end());
        EXPECT_NE(plain.find(range), std::string::npos) << "expected '" << range << "' in\n" << section;
    }
}
