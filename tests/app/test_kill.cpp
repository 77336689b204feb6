// A run killed (SIGKILL) at any moment, while running or while restarting, leaves a
// directory that restarts, and the finished run's checkpoint and diagnostics are those of a run that
// was never interrupted, byte for byte. The runs are child processes of the built binary.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock  = std::chrono::steady_clock;

std::string slurp(const fs::path& p)
{
    std::ifstream f(p, std::ios::binary);
    std::ostringstream s;
    s << f.rdbuf();
    return s.str();
}

/// Starts build/octwalk with args (one OpenMP thread, output to log); returns the child's pid.
pid_t spawn(const std::vector<std::string>& args, const fs::path& log)
{
    std::vector<const char*> argv{OCTWALK_BINARY};
    for (const std::string& a : args) argv.push_back(a.c_str());
    argv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid == 0)
    {
        ::setenv("OMP_NUM_THREADS", "1", 1);
        FILE* f = std::freopen(log.c_str(), "a", stdout);
        if (f) ::dup2(::fileno(stdout), STDERR_FILENO);
        ::execv(OCTWALK_BINARY, const_cast<char* const*>(argv.data()));
        ::_exit(127);
    }
    return pid;
}

/// Waits for pid; its exit code, or -signal when a signal ended it.
int reap(pid_t pid)
{
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

/// Runs to the end; the exit code.
int runToEnd(const std::vector<std::string>& args, const fs::path& log) { return reap(spawn(args, log)); }

/// Runs, and SIGKILLs the child after `delay` unless it ended first; the exit code or -SIGKILL.
int runAndKill(const std::vector<std::string>& args, const fs::path& log, std::chrono::microseconds delay)
{
    pid_t pid  = spawn(args, log);
    auto until = Clock::now() + delay;
    int status = 0;
    while (Clock::now() < until)
    {
        if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ::kill(pid, SIGKILL);
    return reap(pid);
}

/// 48 steps of 2000 bodies (about 0.3 s on one core), a checkpoint after every step.
std::vector<std::string> runArgs(const fs::path& dir)
{
    return {"run",
            "--n",
            "2000",
            "--t-end",
            "0.375",
            "--timestep",
            "0.0078125",
            "--backend",
            "cpu",
            "--checkpoint-every",
            "1",
            "--snapshot-every",
            "8",
            "--quiet",
            "--output-dir",
            dir.string()};
}

/// The files a finished run must have byte for byte as an uninterrupted one.
std::vector<std::string> finalFiles()
{
    std::vector<std::string> files{"checkpoint.bin", "checkpoint.bin.prev", "energy.csv", "lagrange.csv"};
    for (int step = 0; step <= 48; step += 8)
    {
        char name[32];
        std::snprintf(name, sizeof(name), "snap_%06d.tipsy", step);
        files.push_back(name);
    }
    return files;
}

void expectSameOutputs(const fs::path& reference, const fs::path& dir, const std::string& what)
{
    for (const std::string& f : finalFiles())
    {
        ASSERT_TRUE(fs::exists(dir / f)) << what << ": " << f << " is missing";
        EXPECT_EQ(slurp(reference / f), slurp(dir / f)) << what << ": " << f << " differs";
    }
}

} // namespace

TEST(KillSafety, RunsKilledAtRandomTimesRestartBitIdentically)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_kill_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const fs::path log = base / "log.txt";

    const fs::path reference = base / "reference";
    auto start               = Clock::now();
    ASSERT_EQ(runToEnd(runArgs(reference), log), 0) << slurp(log);
    const auto whole = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);

    std::mt19937_64 random(20261122);
    std::uniform_real_distribution<double> fraction(0.0, 1.0);
    auto someTime = [&] { return std::chrono::microseconds(int64_t(fraction(random) * double(whole.count()))); };
    int kills = 0, killedRestarts = 0, beforeFirstCheckpoint = 0;
    for (int round = 0; round < 8; ++round)
    {
        const fs::path dir     = base / ("round" + std::to_string(round));
        const std::string what = "round " + std::to_string(round);
        int code               = runAndKill(runArgs(dir), log, someTime());
        kills += code == -SIGKILL;
        // Killed before its first checkpoint, a run has nothing to restart from: it is started again.
        while (code != 0 && !fs::exists(dir / "checkpoint.bin") && !fs::exists(dir / "checkpoint.bin.prev"))
        {
            ++beforeFirstCheckpoint;
            fs::remove_all(dir);
            code = runAndKill(runArgs(dir), log, whole + someTime());
        }
        // Every surviving state restarts; a restart is killed in turn at random times too.
        std::vector<std::string> restart{"run", "--restart", dir.string(), "--quiet"};
        for (int k = 0; code != 0 && k < 3; ++k)
        {
            code = runAndKill(restart, log, someTime());
            ASSERT_TRUE(code == 0 || code == -SIGKILL) << what << ": restart exited with " << code << "\n"
                                                       << slurp(log);
            killedRestarts += code == -SIGKILL;
        }
        if (code != 0) ASSERT_EQ(runToEnd(restart, log), 0) << what << "\n" << slurp(log);
        expectSameOutputs(reference, dir, what);
    }
    EXPECT_GT(kills, 0) << "no run was killed part-way; the test proved nothing";
    std::cout << "runs killed: " << kills << " (" << beforeFirstCheckpoint
              << " before their first checkpoint), restarts killed: " << killedRestarts << "\n";
    fs::remove_all(base);
}

TEST(KillSafety, DamagedCheckpointRestartsFromThePreviousOne)
{
    fs::path base = fs::temp_directory_path() / ("octwalk_damaged_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const fs::path log = base / "log.txt";
    ASSERT_EQ(runToEnd(runArgs(base / "reference"), log), 0) << slurp(log);

    // A run stopped half-way, whose newest checkpoint is then damaged (one byte flipped).
    const fs::path dir         = base / "damaged";
    std::vector<std::string> a = runArgs(dir);
    a[4]                       = "0.1875";
    ASSERT_EQ(runToEnd(a, log), 0) << slurp(log);
    {
        std::fstream f(dir / "checkpoint.bin", std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(100);
        f.put('\x7f');
    }
    std::ofstream(log, std::ios::trunc).close();
    ASSERT_EQ(runToEnd({"run", "--restart", dir.string(), "--t-end", "0.375", "--quiet"}, log), 0) << slurp(log);
    const std::string said = slurp(log);
    EXPECT_NE(said.find("checksum"), std::string::npos) << said;
    EXPECT_NE(said.find("checkpoint.bin.prev"), std::string::npos) << said;
    EXPECT_TRUE(fs::exists(dir / "checkpoint.bin.damaged"));
    expectSameOutputs(base / "reference", dir, "restart from .prev");

    // Neither valid: refused, naming both files.
    for (const char* f : {"checkpoint.bin", "checkpoint.bin.prev"}) std::ofstream(dir / f, std::ios::trunc) << "x";
    std::ofstream(log, std::ios::trunc).close();
    EXPECT_EQ(runToEnd({"run", "--restart", (dir / "checkpoint.bin").string(), "--quiet"}, log), 1);
    EXPECT_NE(slurp(log).find("no valid checkpoint"), std::string::npos) << slurp(log);
    fs::remove_all(base);
}

TEST(KillSafety, AKilledRunsLogHoldsItsFirstLine)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_kill_log_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const fs::path log = base / "log.txt", dir = base / "run";
    std::vector<std::string> args = runArgs(dir);
    args[4]                       = "100"; // --t-end: far beyond the time the test waits
    const pid_t pid               = spawn(args, log);
    // Killed once its steps have begun (energy.csv holds rows after the header's), with the log a file, not a terminal.
    const auto deadline = Clock::now() + std::chrono::seconds(60);
    auto stepsBegun     = [&] {
        std::ifstream f(dir / "energy.csv");
        std::string line;
        int rows = 0;
        while (std::getline(f, line))
            if (!line.empty() && line[0] != '#') ++rows;
        return rows >= 3;
    };
    while (!stepsBegun() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ::kill(pid, SIGKILL);
    EXPECT_EQ(reap(pid), -SIGKILL) << slurp(log);
    EXPECT_NE(slurp(log).find("2000 bodies"), std::string::npos) << "the log: [" << slurp(log) << "]";
    fs::remove_all(base);
}

TEST(RunLog, AFileGetsTheFirstAndLastStepsProgressOnLinesOfTheirOwn)
{
    const fs::path base = fs::temp_directory_path() / ("octwalk_run_log_" + std::to_string(::getpid()));
    fs::remove_all(base);
    fs::create_directories(base);
    const fs::path log            = base / "log.txt";
    std::vector<std::string> args = runArgs(base / "run");
    args.erase(std::find(args.begin(), args.end(), "--quiet"));
    ASSERT_EQ(runToEnd(args, log), 0) << slurp(log);
    const std::string text = slurp(log);
    EXPECT_EQ(text.find('\r'), std::string::npos) << text;
    // 48 steps of about 6 ms: the first step's line and the last one's, none a minute after another.
    EXPECT_NE(text.find("\nstep 1/48  t = 0.0078125  dE/E0 = "), std::string::npos) << text;
    const size_t last = text.find("\nstep 48/48  t = 0.375  dE/E0 = ");
    ASSERT_NE(last, std::string::npos) << text;
    EXPECT_EQ(text.find("\nstep ", last + 1), std::string::npos) << text;
    EXPECT_NE(text.find("ETA 0 s\nmedian per step over 48 steps"), std::string::npos) << "no trailing blanks: " << text;
    fs::remove_all(base);
}
