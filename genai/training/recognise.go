package training

import (
	"path/filepath"
	"strings"

	"github.com/xpuscope/xpuscope/semconv"
)

// Recognition: a training process maps its framework's library (PyTorch,
// TensorFlow, JAX), or is the launcher of one (from its command line).
// These are pure functions over what procfs gives.

// frameworkOf returns the framework whose library a mapped file is (a
// semconv.TrainingFramework* value), or "".
func frameworkOf(path string) string {
	base := filepath.Base(path)
	switch {
	case strings.HasPrefix(base, "libtorch") && strings.Contains(base, ".so"),
		strings.Contains(path, "/torch/_C.") && strings.HasSuffix(base, ".so"):
		return semconv.TrainingFrameworkPyTorch
	case strings.HasPrefix(base, "libtensorflow_framework.so"), strings.HasPrefix(base, "libtensorflow_cc.so"),
		strings.HasPrefix(base, "_pywrap_tensorflow_internal.so"):
		return semconv.TrainingFrameworkTensorFlow
	case strings.HasPrefix(base, "xla_extension") && strings.Contains(base, ".so"),
		strings.Contains(path, "/jaxlib/") && strings.Contains(base, ".so"):
		return semconv.TrainingFrameworkJAX
	}
	return ""
}

// frameworks is the order a process mapping several is named by.
var frameworks = []string{semconv.TrainingFrameworkPyTorch, semconv.TrainingFrameworkTensorFlow, semconv.TrainingFrameworkJAX}

// program returns the base name of the program a command line runs:
// argv[0], and where argv[0] is a Python, the script it runs or the
// module of its -m.
func program(args []string) (argv0, script, module string) {
	if len(args) == 0 {
		return "", "", ""
	}
	argv0 = filepath.Base(args[0])
	if !strings.HasPrefix(argv0, "python") {
		return argv0, "", ""
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-m" && i+1 < len(args):
			return argv0, "", args[i+1]
		case strings.HasPrefix(a, "-m") && len(a) > 2:
			return argv0, "", a[2:]
		case a == "-c":
			return argv0, "", ""
		case a == "-W" || a == "-X": // options with a value
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return argv0, filepath.Base(a), ""
		}
	}
	return argv0, "", ""
}

// launcherOf returns the launcher a command line runs (a
// semconv.TrainingLauncher* value), or "".
func launcherOf(exe string, args []string) string {
	argv0, script, module := program(args)
	is := func(name string) bool { return exe == name || argv0 == name || script == name }
	next := func(name string) string { // the argument after the program name
		for i, a := range args {
			if filepath.Base(a) == name && i+1 < len(args) {
				return args[i+1]
			}
		}
		return ""
	}
	switch {
	case is("deepspeed"), module == "deepspeed.launcher.launch", module == "deepspeed.launcher.runner":
		return semconv.TrainingLauncherDeepSpeed
	case is("torchrun"), module == "torch.distributed.run", module == "torch.distributed.launch":
		return semconv.TrainingLauncherTorchrun
	case is("accelerate") && next("accelerate") == "launch", is("accelerate-launch"), module == "accelerate.commands.launch":
		return semconv.TrainingLauncherAccelerate
	case is("lightning") && next("lightning") == "run", is("fabric") && next("fabric") == "run",
		module == "lightning.fabric.cli", module == "lightning_fabric.cli":
		return semconv.TrainingLauncherLightning
	}
	return ""
}

// notJobs are the programs that map a framework and are no training job:
// TensorBoard, which holds the event files it reads open, and the model
// servers package genai/serving reads.
var notJobs = []string{"tensorboard", "vllm", "text-generation-server", "text-generation-launcher",
	"tritonserver", "tensorflow_model_server", "torchserve", "model_service_worker.py"}

// excluded says a process is not a training job though it maps a
// framework (notJobs; a vLLM engine core or worker, by its title).
func excluded(exe, comm string, args []string) bool {
	argv0, script, module := program(args)
	for _, n := range notJobs {
		if exe == n || argv0 == n || script == n {
			return true
		}
	}
	return module == "tensorboard" || module == "tensorboard.main" || strings.HasPrefix(module, "vllm.") ||
		strings.HasPrefix(module, "text_generation_server") || strings.HasPrefix(comm, "VLLM::") ||
		len(args) > 0 && strings.HasPrefix(args[0], "VLLM::")
}

// flagValues returns the values of a command-line flag, given as "--name
// value" or "--name=value".
func flagValues(args []string, name string) []string {
	var out []string
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			out = append(out, v)
		} else if a == name && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}
