#include "helpers.hpp"
#include "runtime/bootstrap/pmix_share.hpp"

namespace tutti::bootstrap {
namespace {

using testing::EnvGuard;
using testing::errorOf;

void setTutti(EnvGuard& env) {
  env.set("TUTTI_RANK", "2");
  env.set("TUTTI_WORLD_SIZE", "4");
  env.set("TUTTI_LOCAL_RANK", "0");
  env.set("TUTTI_ADDR", "10.1.2.3");
  env.set("TUTTI_PORT", "29400");
}

void setTorchrun(EnvGuard& env) {
  env.set("RANK", "3");
  env.set("WORLD_SIZE", "8");
  env.set("LOCAL_RANK", "1");
  env.set("MASTER_ADDR", "node17");
  env.set("MASTER_PORT", "29500");
}

// As Open MPI 4.1 sets them under `mpirun -np 2` on one host.
void setOpenMpi(EnvGuard& env, const std::string& rank = "1") {
  env.set("OMPI_COMM_WORLD_RANK", rank);
  env.set("OMPI_COMM_WORLD_SIZE", "2");
  env.set("OMPI_COMM_WORLD_LOCAL_RANK", rank);
  env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "2");
  env.set("PMIX_NAMESPACE", "1981284353");
  env.set("OMPI_MCA_ess_base_jobid", "1981284353");
}

void setSlurm(EnvGuard& env) {
  env.set("SLURM_PROCID", "5");
  env.set("SLURM_NTASKS", "6");
  env.set("SLURM_LOCALID", "2");
  env.set("SLURM_NNODES", "1");
  env.set("SLURM_JOB_ID", "123456");
  env.set("SLURM_STEP_ID", "0");
}

// readLaunchEnv must fail with kInvalidArgument naming each of `parts`.
void expectError(const std::vector<std::string>& parts) {
  const Error error = errorOf([] { readLaunchEnv(); });
  CHECK(error.code() == ErrorCode::kInvalidArgument);
  for (const std::string& part : parts) CHECK_THAT(error.what(), Catch::Contains(part));
}

TEST_CASE("launch environment from TUTTI_*", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setTutti(env);
  SECTION("all set") {
    env.set("TUTTI_SECRET", "00112233445566778899aabbccddeeff");
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.source == "tutti");
    CHECK(launch.rank == 2);
    CHECK(launch.nranks == 4);
    CHECK(launch.localRank == 0);
    CHECK(launch.addr == "10.1.2.3");
    CHECK(launch.port == 29400);
    CHECK(launch.secret.present);
    CHECK(launch.secret.hex() == "00112233445566778899aabbccddeeff");
  }
  SECTION("no local rank, no secret") {
    env.unset("TUTTI_LOCAL_RANK");
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.localRank == -1);
    CHECK_FALSE(launch.secret.present);
  }
  SECTION("bad values name the variable") {
    SECTION("rank not a number") {
      env.set("TUTTI_RANK", "abc");
      expectError({"TUTTI_RANK", "abc"});
    }
    SECTION("negative rank") {
      env.set("TUTTI_RANK", "-1");
      expectError({"TUTTI_RANK", "-1"});
    }
    SECTION("rank >= size") {
      env.set("TUTTI_RANK", "4");
      expectError({"TUTTI_RANK=4", "TUTTI_WORLD_SIZE=4"});
    }
    SECTION("size 0") {
      env.set("TUTTI_WORLD_SIZE", "0");
      expectError({"TUTTI_WORLD_SIZE", "0"});
    }
    SECTION("size missing") {
      env.unset("TUTTI_WORLD_SIZE");
      expectError({"TUTTI_WORLD_SIZE"});
    }
    SECTION("local rank >= size") {
      env.set("TUTTI_LOCAL_RANK", "9");
      expectError({"TUTTI_LOCAL_RANK=9"});
    }
    SECTION("no address") {
      env.unset("TUTTI_ADDR");
      expectError({"TUTTI_ADDR"});
    }
    SECTION("no port") {
      env.unset("TUTTI_PORT");
      expectError({"TUTTI_PORT"});
    }
    SECTION("port out of range") {
      env.set("TUTTI_PORT", "65536");
      expectError({"TUTTI_PORT", "65536"});
    }
    SECTION("malformed secret, without echoing it") {
      for (const char* bad :
           {"xyz", "00112233445566778899aabbccddeefg", "00112233445566778899aabbccddeeff00"}) {
        env.set("TUTTI_SECRET", bad);
        expectError({"TUTTI_SECRET"});
        const Error error = errorOf([] { readLaunchEnv(); });
        CHECK_THAT(error.what(), !Catch::Contains(bad));
      }
    }
  }
}

TEST_CASE("launch environment precedence", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setSlurm(env);
  CHECK(readLaunchEnv().source == "slurm");
  setOpenMpi(env);
  CHECK(readLaunchEnv().source == "openmpi");
  setTorchrun(env);
  CHECK(readLaunchEnv().source == "torchrun");
  setTutti(env);
  CHECK(readLaunchEnv().source == "tutti");
  CHECK(readLaunchEnv().rank == 2);
  // One of RANK/WORLD_SIZE alone is not torchrun.
  EnvGuard more;
  for (const char* name : {"TUTTI_RANK", "TUTTI_WORLD_SIZE", "WORLD_SIZE"}) more.unset(name);
  CHECK(readLaunchEnv().source == "openmpi");
}

TEST_CASE("launch environment from torchrun", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setTorchrun(env);
  SECTION("torchrun's variables") {
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.source == "torchrun");
    CHECK(launch.rank == 3);
    CHECK(launch.nranks == 8);
    CHECK(launch.localRank == 1);
    CHECK(launch.addr == "node17");
    CHECK(launch.port == 29501);  // MASTER_PORT itself is torchrun's own store
  }
  SECTION("TUTTI_ADDR and TUTTI_PORT override the master's") {
    env.set("TUTTI_ADDR", "10.0.0.1");
    CHECK(readLaunchEnv().addr == "10.0.0.1");
    CHECK(readLaunchEnv().port == 29501);
    env.set("TUTTI_PORT", "30000");
    CHECK(readLaunchEnv().port == 30000);
  }
  SECTION("bad values name the variable") {
    SECTION("rank abc") {
      env.set("RANK", "abc");
      expectError({"RANK='abc'"});
    }
    SECTION("negative rank") {
      env.set("RANK", "-3");
      expectError({"RANK=-3", "negative"});
    }
    SECTION("rank >= size") {
      env.set("RANK", "8");
      expectError({"RANK=8", "WORLD_SIZE=8"});
    }
    SECTION("trailing junk") {
      env.set("WORLD_SIZE", "8x");
      expectError({"WORLD_SIZE='8x'"});
    }
    SECTION("empty") {
      env.set("LOCAL_RANK", "");
      expectError({"LOCAL_RANK"});
    }
    SECTION("local rank >= size") {
      env.set("LOCAL_RANK", "8");
      expectError({"LOCAL_RANK=8"});
    }
    SECTION("no master address") {
      env.unset("MASTER_ADDR");
      expectError({"MASTER_ADDR", "TUTTI_ADDR"});
    }
    SECTION("master port out of range") {
      env.set("MASTER_PORT", "70000");
      expectError({"MASTER_PORT=70000"});
    }
    SECTION("no master port") {
      env.unset("MASTER_PORT");
      expectError({"MASTER_PORT"});
    }
  }
}

TEST_CASE("launch environment from Open MPI", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setOpenMpi(env);
  SECTION("one host: loopback and a port derived from the job") {
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.source == "openmpi");
    CHECK(launch.rank == 1);
    CHECK(launch.nranks == 2);
    CHECK(launch.localRank == 1);
    CHECK(launch.addr == "127.0.0.1");
    CHECK(launch.port >= 20000);
    CHECK(launch.port < 60000);
    // Every rank of the job derives the same port; another job another one.
    EnvGuard rank0;
    setOpenMpi(rank0, "0");
    CHECK(readLaunchEnv().port == launch.port);
    rank0.set("PMIX_NAMESPACE", "1981284354");
    CHECK(readLaunchEnv().port != launch.port);
    // Without PMIx, the ess job id.
    rank0.unset("PMIX_NAMESPACE");
    const int fromJobId = readLaunchEnv().port;
    CHECK(fromJobId >= 20000);
    CHECK(fromJobId == launch.port);  // same text, same port
    rank0.set("OMPI_MCA_ess_base_jobid", "77");
    CHECK(readLaunchEnv().port != launch.port);
  }
  SECTION("TUTTI_PORT overrides the derived port") {
    env.set("TUTTI_PORT", "31000");
    CHECK(readLaunchEnv().port == 31000);
  }
  SECTION("no job id and no TUTTI_PORT") {
    env.unset("PMIX_NAMESPACE");
    env.unset("OMPI_MCA_ess_base_jobid");
    expectError({"TUTTI_PORT"});
  }
  SECTION("several hosts need TUTTI_ADDR") {
    env.set("OMPI_COMM_WORLD_SIZE", "4");
    expectError({"TUTTI_ADDR", "OMPI_COMM_WORLD_LOCAL_SIZE=2", "no PMIx server"});
    env.set("TUTTI_ADDR", "10.9.8.7");
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.addr == "10.9.8.7");
    CHECK(launch.port >= 20000);
  }
  SECTION("several hosts started by a PMIx server: rank 0 hands its address and a secret out") {
    env.set("OMPI_COMM_WORLD_SIZE", "4");
    env.set("PMIX_RANK", "1");
    env.set("PMIX_SERVER_URI41", "pmix-server.4242;tcp4://127.0.0.1:4243");
    if (!pmixBuilt()) {
      expectError({"TUTTI_ADDR", "built without libpmix-dev"});
    } else {
      const LaunchEnv launch = readLaunchEnv();
      CHECK(launch.pmix);
      CHECK(launch.addr.empty());
      CHECK(launch.needsPmix());
      env.set("TUTTI_ADDR", "10.9.8.7");
      CHECK(readLaunchEnv().needsPmix());  // for the secret
      env.set("TUTTI_SECRET", std::string(32, 'a'));
      CHECK_FALSE(readLaunchEnv().needsPmix());
      env.unset("PMIX_SERVER_URI41");  // no server to ask
      CHECK_FALSE(readLaunchEnv().pmix);
    }
  }
  SECTION("bad values name the variable") {
    SECTION("size 0") {
      env.set("OMPI_COMM_WORLD_SIZE", "0");
      expectError({"OMPI_COMM_WORLD_SIZE=0"});
    }
    SECTION("rank >= size") {
      env.set("OMPI_COMM_WORLD_RANK", "2");
      expectError({"OMPI_COMM_WORLD_RANK=2", "OMPI_COMM_WORLD_SIZE=2"});
    }
    SECTION("local size abc") {
      env.set("OMPI_COMM_WORLD_LOCAL_SIZE", "abc");
      expectError({"OMPI_COMM_WORLD_LOCAL_SIZE='abc'"});
    }
    SECTION("a bad TUTTI_SECRET with another launcher") {
      env.set("TUTTI_SECRET", "nothex");
      expectError({"TUTTI_SECRET"});
    }
  }
}

TEST_CASE("launch environment from Slurm", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setSlurm(env);
  SECTION("one node") {
    const LaunchEnv launch = readLaunchEnv();
    CHECK(launch.source == "slurm");
    CHECK(launch.rank == 5);
    CHECK(launch.nranks == 6);
    CHECK(launch.localRank == 2);
    CHECK(launch.addr == "127.0.0.1");
    CHECK(launch.port >= 20000);
    CHECK(launch.port < 60000);
    env.set("SLURM_STEP_ID", "1");
    CHECK(readLaunchEnv().port != launch.port);
  }
  SECTION("several nodes need TUTTI_ADDR") {
    env.set("SLURM_NNODES", "2");
    expectError({"TUTTI_ADDR", "SLURM_NNODES=2"});
    env.set("TUTTI_ADDR", "node1");
    env.set("TUTTI_PORT", "40000");
    CHECK(readLaunchEnv().addr == "node1");
    CHECK(readLaunchEnv().port == 40000);
  }
  SECTION("SLURM_JOB_NUM_NODES when SLURM_NNODES is absent") {
    env.unset("SLURM_NNODES");
    expectError({"TUTTI_ADDR"});
    env.set("SLURM_JOB_NUM_NODES", "1");
    CHECK(readLaunchEnv().addr == "127.0.0.1");
  }
  SECTION("bad values name the variable") {
    SECTION("procid abc") {
      env.set("SLURM_PROCID", "abc");
      expectError({"SLURM_PROCID='abc'"});
    }
    SECTION("negative local id") {
      env.set("SLURM_LOCALID", "-1");
      expectError({"SLURM_LOCALID=-1"});
    }
    SECTION("procid >= ntasks") {
      env.set("SLURM_PROCID", "6");
      expectError({"SLURM_PROCID=6", "SLURM_NTASKS=6"});
    }
    SECTION("nnodes abc") {
      env.set("SLURM_NNODES", "x");
      expectError({"SLURM_NNODES='x'"});
    }
  }
}

TEST_CASE("launch environment: the launcher's job id", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  setTutti(env);
  CHECK(readLaunchEnv().jobId.empty());
  SECTION("Open MPI") {
    setOpenMpi(env);
    CHECK(readLaunchEnv().jobId == "PMIX_NAMESPACE=1981284353");
  }
  SECTION("Slurm, under any source") {
    setSlurm(env);
    CHECK(readLaunchEnv().jobId == "SLURM_JOB_ID=123456.0");
  }
  SECTION("torchrun's run id first; its default 'none' says nothing") {
    setTorchrun(env);
    setSlurm(env);
    env.set("TORCHELASTIC_RUN_ID", "none");
    CHECK(readLaunchEnv().jobId == "SLURM_JOB_ID=123456.0");
    env.set("TORCHELASTIC_RUN_ID", "run7");
    CHECK(readLaunchEnv().jobId == "TORCHELASTIC_RUN_ID=run7");
  }
}

TEST_CASE("no launcher at all", "[bootstrap][launch_env]") {
  EnvGuard env(launchVariableNames());
  expectError({"TUTTI_RANK", "torchrun"});
}

}  // namespace
}  // namespace tutti::bootstrap
