// Package training finds the training jobs running on the node and reads
// the figures they already write, with no SDK in the job and no
// configuration: the loss, the learning rate, the gradients' norm, the
// step, the epoch, the throughput and every other scalar a job logs,
// from TensorBoard event files, an MLflow file store's metric files and
// PyTorch Lightning's CSVLogger metrics.csv.
//
// A training process is recognised from /proc (package
// internal/proctable, in every pid and mount namespace): it maps PyTorch
// (libtorch*, torch/_C), TensorFlow (libtensorflow_framework) or JAX
// (xla_extension, jaxlib), or its command line runs a launcher (deepspeed,
// torchrun, accelerate launch, lightning run). A launcher's ranks and
// their data loaders' workers join it: one job, known by its root
// process.
//
// What a job writes is found from the job itself, never a configured
// path: the event files and metrics.csv its processes hold open (read
// through their fd links, from outside the job's mount namespace), the
// directories those files are in (watched: a writer that closes its file
// and opens another is followed), Lightning's default lightning_logs
// under its working directory and --default_root_dir, and its MLflow file
// store, from MLFLOW_TRACKING_URI (read through the environment allowlist
// of internal/envscan, which reads that variable and four others, and no
// other) or ./mlruns. Every path is resolved in the job's root with
// openat2, never out of it. Files are tailed from where the last read
// stopped, a bounded piece an interval; a record whose end is not written
// yet is waited for.
//
// TensorBoard files are decoded by package internal/tfevents: the
// TFRecord framing with its masked CRC-32C, and the Event protocol buffer
// with protowire, scalars in both forms (simple_value; one-element
// tensors of DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16). A record whose
// checksum is wrong, bytes that are no record, a record too large (an
// image), an MLflow or CSV line that does not parse: each is skipped and
// counted in xpuscope.training.read.errors, and never stops the Source.
//
// A job's tags map to the training metrics of package semconv through a
// documented default table (loss, train/loss, Train/Samples/train_loss,
// lr, learning_rate, lr-AdamW, grad_norm, epoch, train/epoch,
// samples_per_second, tokens_per_sec, …); every other tag is
// training.scalar{training.tag}, at most WithMaxTags a job, the rest
// counted. Throughput is what the job logs (samples or tokens a second),
// else the steps a second derived from its step and the times of its
// records. Every series carries the job's framework, launcher and
// executable, the run (its directory's last component) and the format,
// and with WithResolver the pod and container of its root process;
// training.processes lists each process of a job with its process.pid,
// the join to package gpu's per-process GPU series.
package training
