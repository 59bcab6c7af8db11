package semconv

import "go.opentelemetry.io/otel/attribute"

// Attributes of the training series (extensions).
const (
	// TrainingFramework is the framework a training job runs on, from the
	// libraries its processes map.
	TrainingFramework = attribute.Key("training.framework")
	// TrainingLauncher is the launcher that started the job, from its
	// command line; absent for a job started directly.
	TrainingLauncher = attribute.Key("training.launcher")
	// TrainingRun is the last component of the directory the job writes
	// the series' figures to: the run or log directory.
	TrainingRun = attribute.Key("training.run")
	// TrainingLogFormat is what the figures were read from.
	TrainingLogFormat = attribute.Key("training.log.format")
	// TrainingTag is a scalar's tag as the job wrote it.
	TrainingTag = attribute.Key("training.tag")
	// TrainingThroughputItem is what training.throughput counts.
	TrainingThroughputItem = attribute.Key("training.throughput.item")
	// TrainingRole is what a process does in its job.
	TrainingRole = attribute.Key("training.role")
	// XpuscopeTrainingReason is the cap an item went past.
	XpuscopeTrainingReason = attribute.Key("xpuscope.training.reason")
)

// Values of TrainingFramework.
const (
	TrainingFrameworkPyTorch    = "pytorch"    // maps libtorch* or torch/_C
	TrainingFrameworkTensorFlow = "tensorflow" // maps libtensorflow_framework or _pywrap_tensorflow_internal
	TrainingFrameworkJAX        = "jax"        // maps xla_extension or a library of jaxlib
)

// Values of TrainingLauncher.
const (
	TrainingLauncherDeepSpeed  = "deepspeed"  // deepspeed, or python -m deepspeed.launcher.launch / .runner
	TrainingLauncherTorchrun   = "torchrun"   // torchrun, or python -m torch.distributed.run / .launch
	TrainingLauncherAccelerate = "accelerate" // Hugging Face Accelerate's accelerate launch (the Trainer's launcher)
	TrainingLauncherLightning  = "lightning"  // Lightning's CLI: lightning run, fabric run
)

// Values of TrainingLogFormat.
const (
	TrainingLogTensorBoard = "tensorboard" // events.out.tfevents.* files
	TrainingLogMLflow      = "mlflow"      // an MLflow file store's metric files
	TrainingLogCSV         = "csv"         // Lightning's CSVLogger metrics.csv
)

// Values of TrainingThroughputItem.
const (
	TrainingItemSample = "sample" // samples a second, as the job logs it
	TrainingItemToken  = "token"  // tokens a second, as the job logs it
	TrainingItemStep   = "step"   // steps a second, derived from the job's step and the time of its records, where it logs neither
)

// Values of TrainingRole.
const (
	TrainingRoleLauncher = "launcher" // the launcher process (deepspeed, torchrun, accelerate)
	TrainingRoleWorker   = "worker"   // a process that maps the framework: a rank, or a data loader's worker
)

// Values of XpuscopeTrainingReason.
const (
	TrainingReasonJobs      = "jobs"      // a job past the cap of jobs: found, not read
	TrainingReasonFiles     = "files"     // a log file past a job's cap of files: not read
	TrainingReasonTags      = "tags"      // a value of a scalar tag past a job's cap: not exported
	TrainingReasonProcesses = "processes" // a process of a job past its cap: not listed
)

// Values of ErrorType on xpuscope.training.read.errors.
const (
	TrainingErrorBadCRC   = "bad_crc"   // a TensorBoard record whose data does not match its checksum: skipped
	TrainingErrorCorrupt  = "corrupt"   // bytes of a TensorBoard file that are no record: skipped to the next header
	TrainingErrorTooLarge = "too_large" // a record or line longer than the read buffer (an image, a graph): skipped unread
	TrainingErrorDecode   = "decode"    // a record whose checksum is right but which is no Event
	TrainingErrorParse    = "parse"     // an MLflow or CSV line that does not parse
	TrainingErrorRead     = "read"      // a read of a log file that failed
	TrainingErrorOpen     = "open"      // a log file or directory found that could not be opened
)

// trainingAttrs are carried by every training series: the job's
// framework and launcher, its executable, the run, the format, and the
// pod of its root process.
var trainingAttrs = []attribute.Key{
	TrainingFramework, TrainingLauncher, ProcessExecutableName, TrainingRun, TrainingLogFormat,
	K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID,
}

const trainingNote = "Read by package genai/training from what the job writes, with no SDK in it: TensorBoard event files, an MLflow file store's metric files, Lightning's CSVLogger metrics.csv."

// Training metrics (extensions).
var (
	TrainingLoss = Metric{
		Name: "training.loss", Kind: Gauge, Unit: "{loss}", Origin: Extension,
		Description: "The training loss the job last logged.",
		Attributes:  trainingAttrs,
		Note:        trainingNote + " The tags and columns read as the loss: loss, train/loss, train_loss, training_loss, loss/train, Loss/train, train/train_loss, train_loss_step (Lightning), epoch_loss (Keras), lm loss and lm-loss (Megatron), Train/Samples/train_loss (DeepSpeed's monitor).",
	}
	TrainingLearningRate = Metric{
		Name: "training.learning_rate", Kind: Gauge, Unit: "{learning_rate}", Origin: Extension,
		Description: "The learning rate the job last logged.",
		Attributes:  trainingAttrs,
		Note:        trainingNote + " The tags and columns read: lr, learning_rate, learning-rate (Megatron), train/learning_rate, train/lr, epoch_learning_rate (Keras), Train/Samples/lr (DeepSpeed), and lr-<optimizer> (Lightning's LearningRateMonitor, lr-AdamW).",
	}
	TrainingGradientNorm = Metric{
		Name: "training.gradient.norm", Kind: Gauge, Unit: "{norm}", Origin: Extension,
		Description: "The norm of the gradients the job last logged.",
		Attributes:  trainingAttrs,
		Note:        trainingNote + " The tags and columns read: grad_norm, train/grad_norm, gradient_norm, grad-norm (Megatron), global_norm, grad_norm/total.",
	}
	TrainingStep = Metric{
		Name: "training.step", Kind: Gauge, Unit: "{step}", Origin: Extension,
		Description: "The highest global step of the job's last records read.",
		Attributes:  trainingAttrs,
		Note:        trainingNote + " TensorBoard: the step of its events; MLflow: the step of its metric lines; CSV: the step column. A step that goes back (a job resumed from a checkpoint) is taken as it comes.",
	}
	TrainingEpoch = Metric{
		Name: "training.epoch", Kind: Gauge, Unit: "{epoch}", Origin: Extension,
		Description: "The epoch the job last logged.",
		Attributes:  trainingAttrs,
		Note:        trainingNote + " The tags and columns read: epoch, train/epoch (the Hugging Face Trainer, fractional).",
	}
	TrainingThroughput = Metric{
		Name: "training.throughput", Kind: Gauge, Unit: "{item}/s", Origin: Extension,
		Description: "Samples or tokens a second, as the job last logged them; where it logs neither, steps a second, derived from its step and the times of its records.",
		Attributes:  with(trainingAttrs, TrainingThroughputItem),
		Note:        trainingNote + " Samples: samples_per_second, train_samples_per_second, train/train_samples_per_second, samples/sec, throughput/samples_per_sec, Train/Samples/samples_per_sec. Tokens: tokens_per_second, tokens_per_sec, train/tokens_per_second, throughput/tokens_per_sec. Steps: between the last two reads that brought a higher step, over the records' own times (TensorBoard's wall_time, MLflow's timestamp; a CSV has none, and the read times stand in).",
	}
	TrainingScalar = Metric{
		Name: "training.scalar", Kind: Gauge, Unit: "{value}", Origin: Extension,
		Description: "Every other scalar the job logs, by tag: the last value.",
		Attributes:  with(trainingAttrs, TrainingTag),
		Note:        trainingNote + " At most 64 tags a job (genai/training's WithMaxTags), each cut to 128 bytes; the values of the tags past the cap are counted in xpuscope.training.overflow.",
	}
	TrainingProcesses = Metric{
		Name: "training.processes", Kind: UpDownCounter, Unit: "{process}", Origin: Extension,
		Description: "The processes of each training job found on the node, one series each, by role: what joins a job to its processes' GPU series (process.pid).",
		Attributes: []attribute.Key{
			TrainingFramework, TrainingLauncher, ProcessExecutableName, TrainingRun, ProcessPID, TrainingRole,
			K8sNamespaceName, K8sPodName, K8sPodUID, K8sContainerName, ContainerID,
		},
		Note: trainingNote + " Every job that writes a file the Source reads has its processes here: process.gpu.utilization{process.pid} of package gpu joins them to the GPUs they use (both in the host's pid namespace). training.run is the job's first run. At most 64 processes a job.",
	}
)

// Self-metrics of genai/training.
var (
	XpuscopeTrainingJobs = Metric{
		Name: "xpuscope.training.jobs", Kind: UpDownCounter, Unit: "{job}", Origin: Self,
		Description: "Training jobs found on the node, by framework and by what they are read from.",
		Attributes:  []attribute.Key{TrainingFramework, TrainingLogFormat},
		Note:        "A job that writes no file the Source reads counts with training.log.format absent.",
	}
	XpuscopeTrainingRecords = Metric{
		Name: "xpuscope.training.records", Kind: Counter, Unit: "{record}", Origin: Self,
		Description: "Records (TensorBoard events, MLflow and CSV lines) read from the jobs' log files.",
		Attributes:  []attribute.Key{TrainingLogFormat},
	}
	XpuscopeTrainingReadErrors = Metric{
		Name: "xpuscope.training.read.errors", Kind: Counter, Unit: "{error}", Origin: Self,
		Description: "Records skipped and reads failed, by why; none stops the Source.",
		Attributes:  []attribute.Key{TrainingLogFormat, ErrorType},
	}
	XpuscopeTrainingOverflow = Metric{
		Name: "xpuscope.training.overflow", Kind: Counter, Unit: "{item}", Origin: Self,
		Description: "Jobs, files, scalar tags and processes past a cap of the Source, by reason.",
		Attributes:  []attribute.Key{XpuscopeTrainingReason},
		Note:        "Jobs and processes are counted at each interval that meets them, files at each look that meets them, tags' values each.",
	}
)

var trainingMetrics = []Metric{
	TrainingLoss, TrainingLearningRate, TrainingGradientNorm, TrainingStep, TrainingEpoch,
	TrainingThroughput, TrainingScalar, TrainingProcesses,
	XpuscopeTrainingJobs, XpuscopeTrainingRecords, XpuscopeTrainingReadErrors, XpuscopeTrainingOverflow,
}

var trainingAttributes = []Attribute{
	{TrainingFramework, "string", "The framework the training job runs on, from the libraries its processes map.", Extension,
		[]string{TrainingFrameworkPyTorch, TrainingFrameworkTensorFlow, TrainingFrameworkJAX}},
	{TrainingLauncher, "string", "The launcher that started the job, from its command line; absent for a job started directly.", Extension,
		[]string{TrainingLauncherDeepSpeed, TrainingLauncherTorchrun, TrainingLauncherAccelerate, TrainingLauncherLightning}},
	{TrainingRun, "string", "The last component of the directory the job writes the figures to: a TensorBoard log directory (runs/Jan01_12-00-00_host, version_3, train), an MLflow run's id, a CSVLogger's version directory.", Extension, nil},
	{TrainingLogFormat, "string", "What the figures were read from.", Extension,
		[]string{TrainingLogTensorBoard, TrainingLogMLflow, TrainingLogCSV}},
	{TrainingTag, "string", "A scalar's tag (TensorBoard), key (MLflow) or column (CSV), as the job wrote it, at most 128 bytes.", Extension, nil},
	{TrainingThroughputItem, "string", "What training.throughput counts.", Extension,
		[]string{TrainingItemSample, TrainingItemToken, TrainingItemStep}},
	{TrainingRole, "string", "What a process does in its training job.", Extension,
		[]string{TrainingRoleLauncher, TrainingRoleWorker}},
	{XpuscopeTrainingReason, "string", "Which cap of genai/training an item went past.", Self,
		[]string{TrainingReasonJobs, TrainingReasonFiles, TrainingReasonTags, TrainingReasonProcesses}},
}
