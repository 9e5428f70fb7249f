// Tests of the emulated cluster. Those that build namespaces need root (CAP_NET_ADMIN + CAP_SYS_ADMIN) and skip
// with the reason has_net_admin() gives when it is missing.

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "hw/cluster/emulated_cluster.hpp"

namespace {

namespace fs = std::filesystem;
using commsim::hw::ClusterError;
using commsim::hw::EmulatedCluster;
using commsim::hw::EmulatedClusterSpec;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal or by the timeout
  std::string output;  // stdout and stderr together
};

// Runs argv without a shell, capturing its output; kills its whole process group after timeout_s so a hung
// mpirun cannot hang the test.
CommandResult run_command(const std::vector<std::string>& argv, int timeout_s = 30) {
  int out[2];
  if (pipe(out) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(out[1], STDERR_FILENO);
    close(out[0]);
    close(out[1]);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  CommandResult result;
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  char buffer[4096];
  for (;;) {
    const auto left_ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    pollfd readable{out[0], POLLIN, 0};
    if (left_ms <= 0 || poll(&readable, 1, static_cast<int>(left_ms)) == 0) {
      kill(-pid, SIGKILL);
      result.output += "\n[killed after " + std::to_string(timeout_s) + " s]";
      break;
    }
    const ssize_t n = read(out[0], buffer, sizeof buffer);
    if (n <= 0) break;
    result.output.append(buffer, static_cast<std::size_t>(n));
  }
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string tool_path(const std::string& name) {
  for (const char* dir : {"/usr/sbin", "/sbin", "/usr/bin", "/bin", "/usr/local/bin"}) {
    const std::string path = std::string(dir) + "/" + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return {};
}

std::string state_file(const std::string& prefix) { return "/run/commsim/" + prefix + ".json"; }

// Everything of a cluster still visible from the host: namespaces, links, state file; empty when none is left.
std::string leftovers(const std::string& prefix) {
  std::string found;
  for (const auto& [what, argv] : {std::pair{"namespace", std::vector<std::string>{tool_path("ip"), "netns", "list"}},
                                   std::pair{"link", std::vector<std::string>{tool_path("ip"), "-o", "link"}}}) {
    std::istringstream lines(run_command(argv).output);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(prefix) != std::string::npos) found += std::string(what) + ": " + line + "\n";
    }
  }
  if (fs::exists(state_file(prefix))) found += "state file: " + state_file(prefix) + "\n";
  return found;
}

bool has_namespace(const std::string& name) { return fs::exists("/run/netns/" + name); }

// Moves this (forked) process into a node's network namespace; exits the child if that fails.
void enter_namespace(const std::string& netns) {
  const int fd = open(("/var/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) _exit(90);
  close(fd);
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Fixture for tests that build namespaces: skips with the reason when this process cannot.
class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!commsim::hw::has_net_admin(&why)) GTEST_SKIP() << why;
  }
};

struct ReceiveResult {
  std::uint64_t bytes = 0;  // received after the first read
  double seconds = 0;       // from the first read to end of stream
};

TEST_F(ClusterTest, ShapedTcpRateMatchesNicBandwidth) {
  constexpr double kNicBandwidth_Bps = 12.5e6;  // 100 Mbit/s
  constexpr std::size_t kTransfer_bytes = 24u << 20;
  const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = kNicBandwidth_Bps});

  int ready[2];
  int result[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(result), 0);
  const pid_t receiver = fork();
  if (receiver == 0) {  // node 1: accept one connection and time it from the first byte to end of stream
    alarm(50);
    enter_namespace(cluster.node_namespace(1));
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, cluster.node_address(1).c_str(), &address.sin_addr);
    socklen_t length = sizeof address;
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 || listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      _exit(91);
    }
    if (write(ready[1], &address.sin_port, sizeof address.sin_port) != sizeof address.sin_port) _exit(92);
    const int connection = accept(listener, nullptr, nullptr);
    std::vector<char> buffer(1 << 16);
    ReceiveResult received;
    Clock::time_point first_read;
    bool started = false;
    for (ssize_t n; (n = read(connection, buffer.data(), buffer.size())) > 0;) {
      if (!started) {
        first_read = Clock::now();
        started = true;
      } else {
        received.bytes += static_cast<std::uint64_t>(n);
      }
    }
    received.seconds = seconds_since(first_read);
    _exit(write(result[1], &received, sizeof received) == sizeof received ? 0 : 93);
  }
  close(ready[1]);
  close(result[1]);
  in_port_t port = 0;
  ASSERT_EQ(read(ready[0], &port, sizeof port), static_cast<ssize_t>(sizeof port)) << "receiver did not start";

  const pid_t sender = fork();
  if (sender == 0) {  // node 0: connect to node 1 and send the whole transfer
    alarm(50);
    enter_namespace(cluster.node_namespace(0));
    const int connection = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = port;
    inet_pton(AF_INET, cluster.node_address(1).c_str(), &address.sin_addr);
    if (connect(connection, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) _exit(94);
    const std::vector<char> chunk(1 << 16, 'x');
    for (std::size_t sent = 0; sent < kTransfer_bytes; sent += chunk.size()) {
      for (std::size_t done = 0; done < chunk.size();) {
        const ssize_t n = write(connection, chunk.data() + done, chunk.size() - done);
        if (n <= 0) _exit(95);
        done += static_cast<std::size_t>(n);
      }
    }
    close(connection);
    _exit(0);
  }
  ReceiveResult received;
  const ssize_t got = read(result[0], &received, sizeof received);
  int sender_status = 0;
  int receiver_status = 0;
  waitpid(sender, &sender_status, 0);
  waitpid(receiver, &receiver_status, 0);
  close(ready[0]);
  close(result[0]);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof received)) << "receiver status " << receiver_status;
  EXPECT_EQ(sender_status, 0);
  EXPECT_EQ(receiver_status, 0);
  ASSERT_GT(received.seconds, 0);

  // tbf meters whole Ethernet frames: a full frame is 1514 bytes (14 Ethernet + 20 IP + 32 TCP with timestamps
  // + 1448 payload), so the expected goodput is 12.5e6 * 1448 / 1514 = 11.95e6 B/s, 4.4 % under the setting;
  // the bucket (4 ms = 50 kB) adds 0.2 % over 24 MiB. The goodput is asked for within 10 %: the 2-vCPU VM's run to
  // run spread (a run measured 11.10 MB/s, 7 % under it, with nothing else running; centred on the setting instead,
  // that failed a bound of 11.25).
  const double expected_Bps = kNicBandwidth_Bps * 1448.0 / 1514.0;
  const double rate_Bps = static_cast<double>(received.bytes) / received.seconds;
  RecordProperty("measured_rate_Bps", std::to_string(rate_Bps));
  std::printf("measured %.3f MB/s over %.2f s (NIC set to %.3f MB/s, goodput %.3f MB/s expected)\n", rate_Bps / 1e6,
              received.seconds, kNicBandwidth_Bps / 1e6, expected_Bps / 1e6);
  EXPECT_NEAR(rate_Bps, expected_Bps, 0.10 * expected_Bps);
}

TEST_F(ClusterTest, DestructorRemovesEverything) {
  std::string prefix;
  {
    const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = 125e6});
    prefix = cluster.prefix();
    EXPECT_TRUE(has_namespace(prefix + "-fab"));
    EXPECT_TRUE(has_namespace(cluster.node_namespace(0)));
    EXPECT_TRUE(has_namespace(cluster.node_namespace(1)));
    EXPECT_TRUE(fs::exists(state_file(prefix)));
    EXPECT_NE(leftovers(prefix), "");  // the check below can see a live cluster
    const std::string fabric_links = run_command({tool_path("ip"), "-n", prefix + "-fab", "-o", "link"}).output;
    EXPECT_NE(fabric_links.find(prefix + "-br"), std::string::npos) << fabric_links;
    EXPECT_NE(fabric_links.find(prefix + "-p1"), std::string::npos) << fabric_links;
    // The veths are created inside the namespaces: the host's link list never shows them.
    EXPECT_EQ(run_command({tool_path("ip"), "-o", "link"}).output.find(prefix), std::string::npos);
  }
  EXPECT_EQ(leftovers(prefix), "");
}

// The bucket tbf gets is the spec's (a topology's burst_bytes, which the simulator's flow fidelity models), and by
// default 4 ms of traffic: 125e6 B/s x 0.004 s = 500 000 B. tc prints a size in bytes unless it is within 16 B of a
// whole KiB (iproute2's sprint_size): 250 000 and 500 000 are not.
TEST_F(ClusterTest, TbfBucketIsTheSpecs) {
  for (const auto& [burst_bytes, printed] : {std::pair{250000.0, "burst 250000b"}, std::pair{0.0, "burst 500000b"}}) {
    const EmulatedCluster cluster =
        EmulatedCluster::up({.nodes = 1, .nic_bandwidth_Bps = 125e6, .nic_burst_bytes = burst_bytes});
    const std::string qdisc = run_command({tool_path("tc"), "-n", cluster.node_namespace(0), "qdisc", "show", "dev",
                                           cluster.prefix() + "-nic"})
                                  .output;
    EXPECT_NE(qdisc.find(printed), std::string::npos) << qdisc;
  }
  EXPECT_THROW(EmulatedCluster::up({.nodes = 1, .nic_bandwidth_Bps = 125e6, .nic_burst_bytes = 100}), ClusterError);
}

// exit() skips the destructors of live objects; the cluster is still removed (by an atexit handler).
TEST_F(ClusterTest, ExitWithoutDestructorLeavesNothing) {
  int reported[2];
  ASSERT_EQ(pipe(reported), 0);
  const pid_t child = fork();
  if (child == 0) {
    const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = 0});
    if (write(reported[1], cluster.prefix().data(), cluster.prefix().size()) < 0) _exit(1);
    std::exit(0);
  }
  close(reported[1]);
  std::string prefix(8, '\0');
  const ssize_t got = read(reported[0], prefix.data(), prefix.size());
  close(reported[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(got, 8) << "child status " << status;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(leftovers(prefix), "");
}

TEST_F(ClusterTest, PersistentClusterOutlivesOwnerUntilDown) {
  std::string prefix;
  {
    const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = 12.5e6}, true);
    prefix = cluster.prefix();
  }
  EXPECT_TRUE(has_namespace(prefix + "-n1"));
  EXPECT_TRUE(fs::exists(state_file(prefix)));

  const pid_t other_process = fork();
  if (other_process == 0) {
    try {
      EmulatedCluster::down(prefix);
      _exit(0);
    } catch (const ClusterError&) {
      _exit(1);
    }
  }
  int status = 0;
  waitpid(other_process, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(leftovers(prefix), "");
  if (fs::exists(state_file(prefix))) EmulatedCluster::down(prefix);

  EXPECT_THROW(EmulatedCluster::down(prefix), ClusterError);       // already gone
  EXPECT_THROW(EmulatedCluster::down("../../etc"), ClusterError);  // not a prefix
}

// Finds the prefix of the cluster a process is building from its state file (written before any namespace).
std::optional<std::string> prefix_owned_by(pid_t owner) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator("/run/commsim", error)) {
    try {
      std::ifstream in(entry.path());
      const nlohmann::json state = nlohmann::json::parse(in);
      if (state.at("owner_pid").get<pid_t>() == owner) return state.at("prefix").get<std::string>();
    } catch (const nlohmann::json::exception&) {  // still being written, or someone else's
    }
  }
  return std::nullopt;
}

class SignalDuringUp : public ClusterTest, public ::testing::WithParamInterface<int> {};

TEST_P(SignalDuringUp, LeavesNothingBehindAndReRaises) {
  const int signal_number = GetParam();
  constexpr int kNodes = 64;
  const pid_t child = fork();
  if (child == 0) {
    try {
      const EmulatedCluster cluster = EmulatedCluster::up({.nodes = kNodes, .nic_bandwidth_Bps = 12.5e6});
      for (;;) pause();
    } catch (const ClusterError&) {
      _exit(3);
    }
  }
  const auto start = Clock::now();
  std::optional<std::string> prefix;
  while (!(prefix = prefix_owned_by(child)) && seconds_since(start) < 20) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(prefix) << "the child never wrote its state file";
  while (!has_namespace(*prefix + "-n3") && seconds_since(start) < 20) std::this_thread::sleep_for(1ms);
  const bool up_finished = has_namespace(*prefix + "-n" + std::to_string(kNodes - 1));
  kill(child, signal_number);

  int status = 0;
  while (waitpid(child, &status, WNOHANG) == 0) {
    if (seconds_since(start) > 40) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      ADD_FAILURE() << "the child did not end on " << strsignal(signal_number);
      break;
    }
    std::this_thread::sleep_for(1ms);
  }
  std::printf("%s arrived %s up of %d nodes\n", strsignal(signal_number), up_finished ? "after" : "during", kNodes);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal_number) << "status " << status;
  EXPECT_EQ(leftovers(*prefix), "");
}

INSTANTIATE_TEST_SUITE_P(Signals, SignalDuringUp, ::testing::Values(SIGINT, SIGTERM),
                         [](const ::testing::TestParamInfo<int>& param_info) {
                           return param_info.param == SIGINT ? std::string("SIGINT") : std::string("SIGTERM");
                         });

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream words(text);
  return {std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
}

std::string temp_dir_for(const std::string& prefix) {
  const std::string dir = (fs::temp_directory_path() / ("commsim-cluster-test-" + prefix)).string();
  fs::create_directories(dir);
  return dir;
}

TEST_F(ClusterTest, MpirunPlacesTwoRanksOnEachNode) {
  if (tool_path("mpirun").empty()) GTEST_SKIP() << "mpirun is not installed";
  const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = 125e6});
  const std::string dir = temp_dir_for(cluster.prefix());
  std::vector<std::string> argv = split_words(cluster.write_mpi_launch_files(dir, 2));
  // Each rank prints its network namespace and hostname (node 0 keeps the host's, the others get their own).
  argv.insert(argv.end(), {"-np", "4", "/bin/sh", "-c"});
  argv.push_back("echo \"$(" + tool_path("ip") + " netns identify) $(hostname)\"");
  const CommandResult result = run_command(argv, 45);
  fs::remove_all(dir);

  ASSERT_EQ(result.exit_code, 0) << result.output;
  std::string host(256, '\0');
  gethostname(host.data(), host.size());
  host.resize(std::strlen(host.c_str()));
  std::istringstream lines(result.output);
  int on_node0 = 0;
  int on_node1 = 0;
  for (std::string line; std::getline(lines, line);) {
    on_node0 += line == cluster.node_namespace(0) + " " + host;
    on_node1 += line == cluster.node_namespace(1) + " " + cluster.node_namespace(1);
  }
  EXPECT_EQ(on_node0, 2) << result.output;
  EXPECT_EQ(on_node1, 2) << result.output;
}

// An MPI message between nodes must cross the shaped fabric (not shared memory): its rate is the NIC rate.
TEST_F(ClusterTest, MpiTrafficBetweenNodesIsShaped) {
  if (tool_path("mpirun").empty() || tool_path("mpicxx").empty()) GTEST_SKIP() << "mpirun or mpicxx not installed";
  constexpr double kNicBandwidth_Bps = 12.5e6;
  const EmulatedCluster cluster = EmulatedCluster::up({.nodes = 2, .nic_bandwidth_Bps = kNicBandwidth_Bps});
  const std::string dir = temp_dir_for(cluster.prefix());
  std::ofstream(dir + "/send.cpp") << R"(#include <mpi.h>
#include <cstdio>
#include <vector>
int main(int argc, char** argv) {  // rank 0 (node 0) sends 6 MiB to rank 2 (node 1), which prints the rate
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::vector<char> data(6 << 20);
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  if (rank == 0) MPI_Send(data.data(), (int)data.size(), MPI_CHAR, 2, 0, MPI_COMM_WORLD);
  if (rank == 2) {
    MPI_Recv(data.data(), (int)data.size(), MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    std::printf("rate_Bps %f\n", data.size() / (MPI_Wtime() - start));
  }
  MPI_Finalize();
})";
  const CommandResult build = run_command({tool_path("mpicxx"), "-O1", "-o", dir + "/send", dir + "/send.cpp"}, 50);
  ASSERT_EQ(build.exit_code, 0) << build.output;
  std::vector<std::string> argv = split_words(cluster.write_mpi_launch_files(dir, 2));
  argv.insert(argv.end(), {"-np", "4", dir + "/send"});
  const CommandResult result = run_command(argv, 45);
  fs::remove_all(dir);

  ASSERT_EQ(result.exit_code, 0) << result.output;
  const std::size_t at = result.output.find("rate_Bps ");
  ASSERT_NE(at, std::string::npos) << result.output;
  const double rate_Bps = std::strtod(result.output.c_str() + at + 9, nullptr);
  std::printf("MPI node 0 -> node 1: %.3f MB/s (NIC set to %.3f MB/s)\n", rate_Bps / 1e6, kNicBandwidth_Bps / 1e6);
  // Shared memory would be ~100x faster; TCP through tbf gives ~96 % of the setting (see the TCP test).
  EXPECT_GT(rate_Bps, 0.85 * kNicBandwidth_Bps);
  EXPECT_LT(rate_Bps, 1.10 * kNicBandwidth_Bps);
}

void expect_one_line_error(const EmulatedClusterSpec& spec, const std::string& mentions) {
  try {
    EmulatedCluster::up(spec);
    ADD_FAILURE() << "up() accepted nodes=" << spec.nodes << " bandwidth=" << spec.nic_bandwidth_Bps;
  } catch (const ClusterError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find(mentions), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

TEST(ClusterSpecTest, ImpossibleSpecsThrowOneLineErrors) {
  expect_one_line_error({.nodes = 0, .nic_bandwidth_Bps = 125e6},
                        "EmulatedClusterSpec.nodes must be between 1 and 64, got 0");
  expect_one_line_error({.nodes = 1000, .nic_bandwidth_Bps = 125e6}, "got 1000");
  expect_one_line_error({.nodes = 2, .nic_bandwidth_Bps = -1}, "nic_bandwidth_Bps must be 0 (unshaped)");
  expect_one_line_error({.nodes = 2, .nic_bandwidth_Bps = std::nan("")}, "nic_bandwidth_Bps");
  expect_one_line_error({.nodes = 2, .nic_bandwidth_Bps = 10}, "got 10");
}

// Without privileges (root dropped to nobody in a child), has_net_admin() says why in one line and up() throws.
TEST(ClusterPrivilegeTest, WithoutCapabilitiesSaysWhyInOneLine) {
  int reason[2];
  ASSERT_EQ(pipe(reason), 0);
  const pid_t child = fork();
  if (child == 0) {
    if (getuid() == 0 && setuid(65534) != 0) _exit(10);
    std::string why;
    const bool can = commsim::hw::has_net_admin(&why);
    if (write(reason[1], why.data(), why.size()) < 0) _exit(11);
    bool up_throws = false;
    try {
      EmulatedCluster::up({.nodes = 1, .nic_bandwidth_Bps = 0});
    } catch (const ClusterError&) {
      up_throws = true;
    }
    _exit(!can && up_throws ? 0 : 12);
  }
  close(reason[1]);
  std::string why;
  char buffer[512];
  for (ssize_t n; (n = read(reason[0], buffer, sizeof buffer)) > 0;) why.append(buffer, static_cast<std::size_t>(n));
  close(reason[0]);
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status << ", reason: " << why;
  EXPECT_NE(why.find("cannot create network namespaces"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  std::printf("reason given: %s\n", why.c_str());
}

}  // namespace
