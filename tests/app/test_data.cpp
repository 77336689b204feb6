// The small inputs in data/ (data/README.md says where each comes from) still read back as what
// made them: a change to a model generator or to the TIPSY reader shows up here.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "host/io/snapshot.h"
#include "host/models/models.h"

using namespace octwalk;

namespace {

std::string dataPath(const std::string& name) { return std::string(OCTWALK_DATA_DIR) + "/" + name; }

} // namespace

TEST(Data, PlummerInitialConditionsMatchTheGeneratorThatWroteThem)
{
    ParticleSet file  = readSnapshot(dataPath("ics/plummer_1024.tipsy"));
    ParticleSet model = makePlummer(1024, 1);
    ASSERT_EQ(file.size(), model.size());
    // TIPSY stores float32: each value is the model's double rounded once.
    for (int64_t i = 0; i < model.size(); ++i)
    {
        EXPECT_EQ(file.id[i], model.id[i]);
        EXPECT_EQ(file.mass[i], double(float(model.mass[i]))) << "body " << i;
        for (int k = 0; k < 3; ++k)
        {
            EXPECT_EQ((&file.pos[i].x)[k], double(float((&model.pos[i].x)[k]))) << "body " << i;
            EXPECT_EQ((&file.vel[i].x)[k], double(float((&model.vel[i].x)[k]))) << "body " << i;
        }
    }
    std::ifstream sidecar(dataPath("ics/plummer_1024.tipsy.json"));
    std::stringstream text;
    text << sidecar.rdbuf();
    EXPECT_NE(text.str().find("\"model\": \"plummer\", \"n\": 1024, \"seed\": 1"), std::string::npos) << text.str();
}
