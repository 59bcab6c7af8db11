package training

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpuscope/xpuscope/semconv"
)

func TestFrameworkOf(t *testing.T) {
	for path, want := range map[string]string{
		"/usr/lib/python3/dist-packages/torch/lib/libtorch_cpu.so":                    semconv.TrainingFrameworkPyTorch,
		"/opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so":          semconv.TrainingFrameworkPyTorch,
		"/venv/lib/python3.11/site-packages/torch/_C.cpython-311-x86_64-linux-gnu.so": semconv.TrainingFrameworkPyTorch,
		"/usr/local/lib/libtorch.so.2.3":                                              semconv.TrainingFrameworkPyTorch,
		"/venv/site-packages/tensorflow/libtensorflow_framework.so.2":                 semconv.TrainingFrameworkTensorFlow,
		"/venv/site-packages/tensorflow/python/_pywrap_tensorflow_internal.so":        semconv.TrainingFrameworkTensorFlow,
		"/venv/site-packages/jaxlib/xla_extension.so":                                 semconv.TrainingFrameworkJAX,
		"/venv/site-packages/jaxlib/_jax.cpython-312-x86_64-linux-gnu.so":             semconv.TrainingFrameworkJAX,
		"/usr/lib/x86_64-linux-gnu/libz.so.1":                                         "",
		"/venv/site-packages/torchvision/_C.so":                                       "",
		"/venv/site-packages/torch/_C/__init__.pyi":                                   "",
		"/venv/site-packages/jaxlib/version.py":                                       "",
		"/usr/lib/libtorchaudio.txt":                                                  "",
	} {
		assert.Equal(t, want, frameworkOf(path), "%s", path)
	}
}

func TestLauncherOf(t *testing.T) {
	for _, tc := range []struct {
		exe  string
		args []string
		want string
	}{
		{"python3.11", []string{"/venv/bin/python3", "/venv/bin/deepspeed", "--num_gpus", "8", "train.py"}, semconv.TrainingLauncherDeepSpeed},
		{"deepspeed", []string{"deepspeed", "train.py"}, semconv.TrainingLauncherDeepSpeed},
		{"python3.11", []string{"python", "-m", "deepspeed.launcher.launch", "--world_info=x"}, semconv.TrainingLauncherDeepSpeed},
		{"python3.11", []string{"/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc_per_node=8", "train.py"}, semconv.TrainingLauncherTorchrun},
		{"python3.11", []string{"python3", "-u", "-m", "torch.distributed.run", "train.py"}, semconv.TrainingLauncherTorchrun},
		{"python3.11", []string{"python3", "-mtorch.distributed.launch", "train.py"}, semconv.TrainingLauncherTorchrun},
		{"python3.11", []string{"/venv/bin/python", "/venv/bin/accelerate", "launch", "train.py"}, semconv.TrainingLauncherAccelerate},
		{"python3.11", []string{"/venv/bin/python", "/venv/bin/accelerate", "config"}, ""},
		{"python3.11", []string{"python", "-m", "accelerate.commands.launch", "train.py"}, semconv.TrainingLauncherAccelerate},
		{"python3.11", []string{"python", "/venv/bin/lightning", "run", "model", "train.py"}, semconv.TrainingLauncherLightning},
		{"python3.11", []string{"python", "/venv/bin/fabric", "run", "train.py"}, semconv.TrainingLauncherLightning},
		{"python3.11", []string{"python", "train.py", "--deepspeed", "ds.json"}, ""},
		{"python3.11", []string{"python", "-c", "import torchrun"}, ""},
		{"bash", []string{"bash", "-c", "torchrun train.py"}, ""},
	} {
		assert.Equal(t, tc.want, launcherOf(tc.exe, tc.args), "%v", tc.args)
	}
}

// TensorBoard and the model servers map a framework and are no job.
func TestExcluded(t *testing.T) {
	for _, tc := range []struct {
		exe, comm string
		args      []string
		want      bool
	}{
		{"python3.11", "tensorboard", []string{"/venv/bin/python", "/venv/bin/tensorboard", "--logdir", "runs"}, true},
		{"python3.11", "python", []string{"python", "-m", "tensorboard.main", "--logdir", "runs"}, true},
		{"tensorboard", "tensorboard", []string{"tensorboard"}, true},
		{"python3.11", "vllm", []string{"/venv/bin/python", "/venv/bin/vllm", "serve", "m"}, true},
		{"python3.11", "python3", []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, true},
		{"python3.11", "VLLM::EngineCor", []string{"VLLM::EngineCore"}, true},
		{"python3.11", "text-generation", []string{"/usr/bin/python", "/usr/bin/text-generation-server", "serve", "m"}, true},
		{"python3.11", "python", []string{"python", "/ts/model_service_worker.py", "--sock-type", "unix"}, true},
		{"python3.11", "python", []string{"python", "train.py", "--logdir", "tensorboard"}, false},
		{"python3.11", "python", []string{"python", "train_vllm_draft.py"}, false},
	} {
		assert.Equal(t, tc.want, excluded(tc.exe, tc.comm, tc.args), "%v", tc.args)
	}
}

func TestFlagValues(t *testing.T) {
	args := []string{"python", "train.py", "--default_root_dir", "/ckpt", "--trainer.default_root_dir=/b", "--default_root_dir"}
	assert.Equal(t, []string{"/ckpt"}, flagValues(args, "--default_root_dir"))
	assert.Equal(t, []string{"/b"}, flagValues(args, "--trainer.default_root_dir"))
}

func TestMLflowStore(t *testing.T) {
	for _, tc := range []struct {
		uri       string
		set       bool
		path, why string
	}{
		{"", false, "", ""},
		{"file:///data/mlruns", true, "/data/mlruns", ""},
		{"file:/data/mlruns", true, "/data/mlruns", ""},
		{"file:rel/mlruns", true, "rel/mlruns", ""},
		{"file:///data/with%20space", true, "/data/with space", ""},
		{"/data/mlruns", true, "/data/mlruns", ""},
		{"./mlruns", true, "./mlruns", ""},
		{"mlruns", true, "mlruns", ""},
		{"https://user:hunter2@mlflow.example.com", true, "", "MLFLOW_TRACKING_URI names a tracking server or database (https:), not a file store: not read"},
		{"databricks", true, "", "MLFLOW_TRACKING_URI names a tracking server (databricks), not a file store: not read"},
		{"databricks://profile", true, "", "MLFLOW_TRACKING_URI names a tracking server or database (databricks:), not a file store: not read"},
		{"sqlite:///mlflow.db", true, "", "MLFLOW_TRACKING_URI names a tracking server or database (sqlite:), not a file store: not read"},
	} {
		path, why := mlflowStore(tc.uri, tc.set)
		assert.Equal(t, tc.path, path, "%q", tc.uri)
		assert.Equal(t, tc.why, why, "%q", tc.uri)
		assert.NotContains(t, why, "hunter2", "credentials in a URI are never said")
	}
}
