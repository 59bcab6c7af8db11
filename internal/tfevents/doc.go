// Package tfevents reads TensorBoard event files, the
// events.out.tfevents.* files that PyTorch's SummaryWriter, TensorFlow's
// tf.summary, Keras's TensorBoard callback, Lightning's TensorBoardLogger
// and the Hugging Face Trainer write: a TFRecord file of serialized Event
// protocol buffers.
//
// The two parts are apart from each other and from any file: Reader takes
// the TFRecord framing off a growing file (each record's length, the
// masked CRC-32C of the length, the data, the masked CRC-32C of the data;
// hash/crc32's Castagnoli table), from the offset it last stopped at,
// waiting for a record whose end is not written yet and skipping a record
// whose checksum is wrong; DecodeEvent reads one Event with
// google.golang.org/protobuf/encoding/protowire, without generated code
// and without allocating: its wall time and step, and each scalar of its
// Summary, in both of the forms writers use (simple_value, and a tensor
// of one element of DT_FLOAT, DT_DOUBLE, DT_HALF or DT_BFLOAT16 in
// float_val, double_val, half_val or tensor_content).
//
// The field numbers and the DataType values are those of TensorFlow's
// event.proto, summary.proto, tensor.proto, tensor_shape.proto and
// types.proto; the framing is that of TensorFlow's record_writer.cc.
package tfevents
