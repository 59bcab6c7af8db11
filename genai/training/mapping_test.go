package training

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoleOf(t *testing.T) {
	for tag, want := range map[string]role{
		"loss": roleLoss, "train/loss": roleLoss, "Train/Samples/train_loss": roleLoss, "epoch_loss": roleLoss, "lm loss": roleLoss,
		"lr": roleLR, "learning_rate": roleLR, "lr-AdamW": roleLR, "lr-SGD/pg1": roleLR, "Train/Samples/lr": roleLR,
		"grad_norm": roleGradNorm, "train/grad_norm": roleGradNorm,
		"epoch": roleEpoch, "train/epoch": roleEpoch, "step": roleStep, "global_step": roleStep,
		"train_samples_per_second": roleSamplesSec, "tokens_per_sec": roleTokensSec,
		"val/loss": roleScalar, "Loss": roleScalar, "lr-": roleScalar, "accuracy": roleScalar,
	} {
		assert.Equal(t, want, roleOf([]byte(tag)), "%q", tag)
	}
	assert.Zero(t, testing.AllocsPerRun(100, func() { roleOf([]byte("train/loss")) }))
}

func TestClipTag(t *testing.T) {
	assert.Equal(t, "loss", clipTag([]byte("loss")))
	long := strings.Repeat("é", maxTagLen) // two bytes each
	got := clipTag([]byte(long))
	assert.LessOrEqual(t, len(got), maxTagLen)
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, "a\uFFFDb", clipTag([]byte("a\xffb")))
}

// The step rate: between the last two reads that brought a higher step,
// over the records' times; a step that goes back starts it over.
func TestSeriesStepRate(t *testing.T) {
	b := &tagBudget{max: 2, tags: map[string]struct{}{}}
	var s series
	read := func(now float64, steps ...int64) {
		for _, st := range steps {
			s.observe([]byte("loss"), float64(st), st, true, 1000+float64(st)/2, b) // two steps a second
		}
		s.endRead(now, true)
	}
	read(5000, 0, 10, 20)
	assert.Equal(t, int64(20), s.step)
	assert.False(t, s.stepRate.set, "one read: no rate yet")
	read(5010, 30, 40)
	assert.True(t, s.stepRate.set)
	assert.Equal(t, 2.0, s.stepRate.v, "20 steps over the records' 10 s")
	read(5020) // nothing new: the rate stays
	assert.Equal(t, 2.0, s.stepRate.v)
	read(5030, 5) // went back: a resumed job
	assert.Equal(t, int64(5), s.step)
	read(5040, 15)
	assert.Equal(t, 2.0, s.stepRate.v, "from the step it went back to")
	assert.Equal(t, 15.0, s.loss.v)

	// No time in the records (a CSV): the read times stand in.
	var c series
	c.observe([]byte("step"), 10, 0, false, 0, b)
	c.endRead(100, false)
	c.observe([]byte("step"), 40, 0, false, 0, b)
	c.endRead(110, false)
	assert.Equal(t, int64(40), c.step)
	assert.Equal(t, 3.0, c.stepRate.v)
}

// Tags past a job's cap are not kept; their values are counted.
func TestTagBudget(t *testing.T) {
	b := &tagBudget{max: 2, tags: map[string]struct{}{}}
	var s1, s2 series
	s1.observe([]byte("a"), 1, 0, false, 0, b)
	s2.observe([]byte("b"), 2, 0, false, 0, b)
	s2.observe([]byte("c"), 3, 0, false, 0, b)
	s1.observe([]byte("c"), 3, 0, false, 0, b)
	s1.observe([]byte("a"), 4, 0, false, 0, b)
	s1.observe([]byte("loss"), 5, 0, false, 0, b) // a mapped tag: not counted against the cap
	assert.Equal(t, map[string]float64{"a": 4}, s1.scalars)
	assert.Equal(t, map[string]float64{"b": 2}, s2.scalars)
	assert.Equal(t, int64(2), b.overflow)
	assert.Equal(t, 5.0, s1.loss.v)
	require.Zero(t, testing.AllocsPerRun(100, func() { s1.observe([]byte("a"), 1, 0, false, 0, b) }), "a tag seen")
}
