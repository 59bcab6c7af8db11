package training

import (
	"strings"
	"unicode/utf8"
)

// The mapping of a job's tags (TensorBoard), keys (MLflow) and columns
// (CSV) to the training metrics. It is a plain table, documented in
// semconv: what frameworks and trainers name these figures by default.

// role is what a tag's values are.
type role uint8

const (
	roleScalar     role = iota // every other tag: training.scalar{training.tag}
	roleLoss                   // training.loss
	roleLR                     // training.learning_rate
	roleGradNorm               // training.gradient.norm
	roleEpoch                  // training.epoch
	roleStep                   // training.step (a CSV's step column, a tag named step)
	roleSamplesSec             // training.throughput{item=sample}
	roleTokensSec              // training.throughput{item=token}
)

// tagRoles is the default mapping.
var tagRoles = map[string]role{
	// The loss: PyTorch and Lightning scripts, the Hugging Face Trainer
	// (loss, train/loss), Keras (epoch_loss), Megatron (lm loss),
	// DeepSpeed's monitor (Train/Samples/train_loss).
	"loss": roleLoss, "train/loss": roleLoss, "train_loss": roleLoss, "training_loss": roleLoss,
	"loss/train": roleLoss, "Loss/train": roleLoss, "train/train_loss": roleLoss, "epoch_loss": roleLoss,
	"lm loss": roleLoss, "lm-loss": roleLoss, "Train/Samples/train_loss": roleLoss, "train_loss_step": roleLoss,
	// The learning rate (and Lightning's lr-<optimizer>, below).
	"lr": roleLR, "learning_rate": roleLR, "learning-rate": roleLR, "train/learning_rate": roleLR,
	"train/lr": roleLR, "epoch_learning_rate": roleLR, "Train/Samples/lr": roleLR,
	// The gradients' norm.
	"grad_norm": roleGradNorm, "train/grad_norm": roleGradNorm, "gradient_norm": roleGradNorm,
	"grad-norm": roleGradNorm, "global_norm": roleGradNorm, "grad_norm/total": roleGradNorm,
	// The epoch, and a step logged as a value.
	"epoch": roleEpoch, "train/epoch": roleEpoch,
	"step": roleStep, "global_step": roleStep, "train/global_step": roleStep,
	// Throughput, where the job logs it.
	"samples_per_second": roleSamplesSec, "train_samples_per_second": roleSamplesSec,
	"train/train_samples_per_second": roleSamplesSec, "samples/sec": roleSamplesSec,
	"throughput/samples_per_sec": roleSamplesSec, "Train/Samples/samples_per_sec": roleSamplesSec,
	"tokens_per_second": roleTokensSec, "tokens_per_sec": roleTokensSec,
	"train/tokens_per_second": roleTokensSec, "throughput/tokens_per_sec": roleTokensSec,
}

// roleOf returns what a tag's values are. It allocates nothing.
func roleOf(tag []byte) role {
	if r, ok := tagRoles[string(tag)]; ok {
		return r
	}
	// Lightning's LearningRateMonitor: lr-<optimizer>, lr-<optimizer>/pg1.
	if len(tag) > 3 && string(tag[:3]) == "lr-" {
		return roleLR
	}
	return roleScalar
}

// maxTagLen bounds a tag kept as an attribute value.
const maxTagLen = 128

// clipTag cuts a tag to maxTagLen bytes, on a rune's boundary, and makes
// it valid UTF-8.
func clipTag(tag []byte) string {
	if len(tag) > maxTagLen {
		tag = tag[:maxTagLen]
		for len(tag) > 0 && !utf8.Valid(tag) {
			tag = tag[:len(tag)-1]
		}
	}
	return strings.ToValidUTF8(string(tag), "\uFFFD")
}

// value is a figure's last value, and whether it was ever set.
type value struct {
	v   float64
	set bool
}

func (v *value) put(x float64) { v.v, v.set = x, true }

// series is what is kept of one run's figures (one directory a job writes
// to, in one format): the last value of each mapped figure, the step of
// the last read, the step rate between the last two reads that brought a
// higher one, and the other tags' last values.
type series struct {
	loss, lr, gradNorm, epoch, samples, tokens value
	step                                       int64
	stepSet                                    bool
	wall                                       float64 // the time of the record of step, Unix seconds
	// The highest step of the read under way, and its record's time.
	readStep int64
	readWall float64
	readSet  bool
	// The step rate: from the step and time of the read before.
	rateStep  int64
	rateWall  float64
	rateBase  bool
	stepRate  value
	scalars   map[string]float64
	scalarSeq []string // the tags in the order first seen
}

// tagBudget is a job's cap on tags, shared by its runs.
type tagBudget struct {
	max      int
	tags     map[string]struct{}
	overflow int64 // values of tags past the cap
}

// observe takes one value of a tag at a step (hasStep: the record has
// one) and a time (Unix seconds; 0 for none). It allocates only for a tag
// it has not seen.
func (s *series) observe(tag []byte, v float64, step int64, hasStep bool, wall float64, b *tagBudget) {
	switch roleOf(tag) {
	case roleLoss:
		s.loss.put(v)
	case roleLR:
		s.lr.put(v)
	case roleGradNorm:
		s.gradNorm.put(v)
	case roleEpoch:
		s.epoch.put(v)
	case roleSamplesSec:
		s.samples.put(v)
	case roleTokensSec:
		s.tokens.put(v)
	case roleStep:
		if !hasStep && v >= 0 && v < 1<<62 { // not NaN either
			step, hasStep = int64(v), true
		}
	default:
		if _, ok := s.scalars[string(tag)]; ok {
			s.scalars[string(tag)] = v
			break
		}
		t := clipTag(tag)
		if _, ok := b.tags[t]; !ok {
			if len(b.tags) >= b.max {
				b.overflow++
				break
			}
			b.tags[t] = struct{}{}
		}
		if s.scalars == nil {
			s.scalars = map[string]float64{}
		}
		if _, ok := s.scalars[t]; !ok {
			s.scalarSeq = append(s.scalarSeq, t)
		}
		s.scalars[t] = v
	}
	if hasStep {
		s.sawStep(step, wall)
	}
}

// sawStep takes a record's step, within a read.
func (s *series) sawStep(step int64, wall float64) {
	switch {
	case !s.readSet || step > s.readStep:
		s.readStep, s.readWall, s.readSet = step, wall, true
	case step == s.readStep && wall > s.readWall:
		s.readWall = wall
	}
}

// endRead ends a read: its highest step is the run's step (one lower than
// before, a job resumed from a checkpoint or a new run in the same
// directory, is taken as it comes, and the rate starts over), and the
// step rate is updated: between the step and time of the read before that
// brought another step, and this one's. now (Unix seconds) stands in for
// the time of a format whose records carry none (timed false).
func (s *series) endRead(now float64, timed bool) {
	if !s.readSet {
		return
	}
	step, wall := s.readStep, s.readWall
	if !timed || wall <= 0 {
		wall = now
	}
	s.readSet = false
	if s.stepSet && step < s.step {
		s.rateBase = false
	}
	s.step, s.wall, s.stepSet = step, wall, true
	if s.rateBase && step > s.rateStep && wall > s.rateWall {
		s.stepRate.put(float64(step-s.rateStep) / (wall - s.rateWall))
	}
	if !s.rateBase || step != s.rateStep {
		s.rateStep, s.rateWall, s.rateBase = step, wall, true
	}
}
