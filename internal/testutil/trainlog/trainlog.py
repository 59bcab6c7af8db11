#!/usr/bin/python3
"""What training jobs write, written for the tests of xpuscope's training
Source by a writer of their own: TensorBoard event files (the TFRecord
framing and the Event protocol buffer encoded here by hand, with a
CRC-32C of its own), MLflow file-store metric files and PyTorch
Lightning's CSVLogger metrics.csv. It uses only Python's standard library,
and shares no code with the reader it checks.

  trainlog.py fixture PATH       a TensorBoard file of every form, and a
                                 manifest of what it holds (JSON, stdout)
  trainlog.py big PATH N         N simple-value records
  trainlog.py job [flags]        a training job: appends what stdin says
"""

import csv
import ctypes
import io
import json
import os
import socket
import struct
import sys
import time

# --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) ----------------

def _table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t

_T = _table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = _T
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283, "CRC-32C check value"


def masked(data):
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data, bad_crc=False):
    """One TFRecord: length, masked CRC of the length, data, masked CRC."""
    length = struct.pack("<Q", len(data))
    footer = masked(data)
    if bad_crc:
        footer ^= 0x1
    return length + struct.pack("<I", masked(length)) + data + struct.pack("<I", footer)

# --- protocol buffers, by hand ---------------------------------------------

def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(num, wire):
    return varint(num << 3 | wire)


def f_varint(num, n):
    return key(num, 0) + varint(n)


def f_double(num, x):
    return key(num, 1) + struct.pack("<d", x)


def f_float(num, x):
    return key(num, 5) + struct.pack("<f", x)


def f_bytes(num, b):
    return key(num, 2) + varint(len(b)) + b


# TensorFlow's DataType values (types.proto).
DT_FLOAT, DT_DOUBLE, DT_BFLOAT16, DT_HALF = 1, 2, 14, 19


def event(step, wall, summary=None, file_version=None):
    """An Event: wall_time 1, step 2, file_version 3, summary 5."""
    b = f_double(1, wall) + f_varint(2, step)
    if file_version is not None:
        b += f_bytes(3, file_version.encode())
    if summary is not None:
        b += f_bytes(5, summary)
    return b


def summary(*values):
    """A Summary: repeated Value value = 1."""
    return b"".join(f_bytes(1, v) for v in values)


SCALARS_METADATA = f_bytes(1, f_bytes(1, b"scalars"))  # SummaryMetadata.plugin_data.plugin_name


def simple(tag, x):
    """A Value with simple_value (2), as PyTorch writes by default."""
    return f_bytes(1, tag.encode()) + f_float(2, x)


def shape(*dims):
    """A TensorShapeProto: repeated Dim dim = 2, Dim.size = 1."""
    return b"".join(f_bytes(2, f_varint(1, d)) for d in dims)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def half_bits(x):
    return struct.unpack("<H", struct.pack("<e", x))[0]


def half(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def bf16_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0] >> 16


def bf16(x):
    return struct.unpack("<f", struct.pack("<I", bf16_bits(x) << 16))[0]


def tensor_value(tag, dtype, x, form, dims=()):
    """A Value with a tensor (8) holding x: form is val (the type's
    repeated field, packed), unpacked (float_val as separate fields) or
    content (tensor_content). Returns the Value and x as written."""
    t = f_varint(1, dtype) + f_bytes(2, shape(*dims))
    if dtype == DT_FLOAT:
        got = f32(x)
        if form == "content":
            t += f_bytes(4, struct.pack("<f", x))
        elif form == "unpacked":
            t += f_float(5, x)
        else:
            t += f_bytes(5, struct.pack("<f", x))
    elif dtype == DT_DOUBLE:
        got = x
        if form == "content":
            t += f_bytes(4, struct.pack("<d", x))
        else:
            t += f_bytes(6, struct.pack("<d", x))
    elif dtype in (DT_HALF, DT_BFLOAT16):
        bits, got = (half_bits(x), half(x)) if dtype == DT_HALF else (bf16_bits(x), bf16(x))
        if form == "content":
            t += f_bytes(4, struct.pack("<H", bits))
        else:
            t += f_bytes(13, varint(bits))
    else:
        raise ValueError(dtype)
    v = f_bytes(1, tag.encode()) + f_bytes(9, SCALARS_METADATA) + f_bytes(8, t)
    return v, got


DTYPE_NAMES = {DT_FLOAT: "DT_FLOAT", DT_DOUBLE: "DT_DOUBLE", DT_HALF: "DT_HALF", DT_BFLOAT16: "DT_BFLOAT16"}

# --- the fixture -----------------------------------------------------------

def fixture(path):
    """A file of every form a scalar is written in, and of what a reader
    must pass over or skip, with its manifest."""
    t0 = 1700000000.25
    out = io.BytesIO()
    m = {"scalars": [], "records": 0, "bad_crc": 0, "corrupt": 0, "too_large": 0}

    def put(data, **kw):
        out.write(record(data, **kw))
        if not kw.get("bad_crc"):
            m["records"] += 1

    def scalar(tag, step, wall, value, dtype="DT_FLOAT", tensor=False):
        m["scalars"].append({"tag": tag, "step": step, "wall_time": wall, "value": value,
                             "dtype": dtype, "tensor": tensor})

    put(event(0, t0, file_version="brain.Event:2"))
    # PyTorch's default: simple_value, two in one summary.
    w = t0 + 1
    put(event(1, w, summary(simple("loss", 2.5), simple("lr", 0.001))))
    scalar("loss", 1, w, 2.5)
    scalar("lr", 1, w, f32(0.001))
    # Tensors of every dtype, in their repeated field and in tensor_content.
    step = 2
    for dtype, x in ((DT_FLOAT, 1.75), (DT_DOUBLE, 0.1), (DT_HALF, 0.1), (DT_BFLOAT16, 3.14159)):
        for form in ("val", "content"):
            tag = "%s/%s" % (DTYPE_NAMES[dtype].lower(), form)
            v, got = tensor_value(tag, dtype, x, form)
            w = t0 + step
            put(event(step, w, summary(v)))
            scalar(tag, step, w, got, DTYPE_NAMES[dtype], True)
            step += 1
    # float_val not packed; a shape of one element; negative values.
    w = t0 + step
    v1, g1 = tensor_value("unpacked", DT_FLOAT, -0.5, "unpacked")
    v2, g2 = tensor_value("shape1", DT_FLOAT, 7.0, "val", dims=(1,))
    v3, g3 = tensor_value("neg_half", DT_HALF, -2.25, "val")
    put(event(step, w, summary(v1, v2, v3)))
    scalar("unpacked", step, w, g1, "DT_FLOAT", True)
    scalar("shape1", step, w, g2, "DT_FLOAT", True)
    scalar("neg_half", step, w, g3, "DT_HALF", True)
    step += 1
    # What is not a scalar: a tensor of two elements, a histogram, an
    # image, a text tensor; beside a scalar in the same summary.
    w = t0 + step
    vec = f_bytes(1, b"vector") + f_bytes(8, f_varint(1, DT_FLOAT) + f_bytes(2, shape(2)) + f_bytes(5, struct.pack("<ff", 1, 2)))
    histo = f_bytes(1, b"weights") + f_bytes(5, f_double(1, -1) + f_double(2, 1) + f_double(3, 10))
    image = f_bytes(1, b"sample") + f_bytes(4, f_varint(1, 2) + f_varint(2, 2) + f_bytes(4, b"\x89PNG"))
    text = f_bytes(1, b"note") + f_bytes(8, f_varint(1, 7) + f_bytes(8, b"hello"))
    put(event(step, w, summary(vec, histo, simple("between", 4.0), image, text)))
    scalar("between", step, w, 4.0)
    step += 1
    # A record whose data does not match its checksum: skipped.
    put(event(step, t0 + step, summary(simple("bad_crc", 99.0))), bad_crc=True)
    m["bad_crc"] += 1
    step += 1
    # Bytes that are no record: the reader looks for the next header.
    out.write(b"\x07" * 23)
    m["corrupt"] += 1
    w = t0 + step
    put(event(step, w, summary(simple("after_garbage", 5.0))))
    scalar("after_garbage", step, w, 5.0)
    step += 1
    # A record larger than a 64 KiB read buffer: an image.
    big = f_bytes(1, b"big_image") + f_bytes(4, f_bytes(4, b"\x00" * (100 << 10)))
    put(event(step, t0 + step, summary(big)))
    m["records"] -= 1  # not handed out through a 64 KiB buffer
    m["too_large"] += 1
    step += 1
    w = t0 + step
    put(event(step, w, summary(simple("last", -1.0))))
    scalar("last", step, w, -1.0)
    step += 1
    # A torn tail: the first 20 bytes of a record; the rest in PATH.rest.
    w = t0 + step
    torn = record(event(step, w, summary(simple("torn", 6.5))))
    out.write(torn[:20])
    with open(path, "wb") as f:
        f.write(out.getvalue())
    with open(path + ".rest", "wb") as f:
        f.write(torn[20:])
    m["torn"] = {"tag": "torn", "step": step, "wall_time": w, "value": 6.5, "dtype": "DT_FLOAT", "tensor": False}
    m["size"] = len(out.getvalue())
    json.dump(m, sys.stdout)


def big(path, n):
    """n records of one simple value each, steps 0..n-1, value step/4."""
    t0 = 1700000000.0
    with open(path, "wb") as f:
        f.write(record(event(0, t0, file_version="brain.Event:2")))
        for i in range(n):
            f.write(record(event(i, t0 + i, summary(simple("loss", i / 4)))))
    json.dump({"records": n + 1, "last": {"tag": "loss", "step": n - 1, "value": (n - 1) / 4}}, sys.stdout)

# --- a training job ----------------------------------------------------------

class Job:
    """A job that writes as PyTorch's SummaryWriter, MLflow's file store
    and Lightning's CSVLogger do, one command of stdin at a time."""

    def __init__(self, logdir, mlflow_run, csv_dir):
        self.logdir, self.mlflow_run, self.csv_dir = logdir, mlflow_run, csv_dir
        self.f, self.files, self.pending = None, 0, b""
        self.csv_keys, self.csv_rows = [], []
        if logdir:
            os.makedirs(logdir, exist_ok=True)
            self.open()

    def open(self):
        """A new events file, named as SummaryWriter names it:
        events.out.tfevents.<time>.<host>.<pid>.<n>; it is held open."""
        if self.f:
            self.f.close()
        name = "events.out.tfevents.%d.%s.%d.%d" % (int(time.time()), socket.gethostname(), os.getpid(), self.files)
        self.files += 1
        self.path = os.path.join(self.logdir, name)
        self.f = open(self.path, "ab")
        self.write(record(event(0, time.time(), file_version="brain.Event:2")))
        return self.path

    def write(self, b):
        self.f.write(b)
        self.f.flush()

    def mlflow(self, key, step, value):
        """MLflow's FileStore._log_run_metric: open, append a line, close."""
        path = os.path.join(self.mlflow_run, "metrics", key)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "a") as f:
            f.write("%s %s %s\n" % (int(time.time() * 1000), float(value), int(step)))

    def csv(self, row):
        """Lightning's CSVLogger save(): new keys rewrite the file with the
        new header, else the rows are appended."""
        os.makedirs(self.csv_dir, exist_ok=True)
        path = os.path.join(self.csv_dir, "metrics.csv")
        new = [k for k in row if k not in self.csv_keys]
        self.csv_keys += new
        exists = os.path.isfile(path)
        if new and exists:
            with open(path, newline="") as f:
                old = list(csv.DictReader(f))
            with open(path, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=self.csv_keys)
                w.writeheader()
                w.writerows(old)
        with open(path, "a" if exists else "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=self.csv_keys)
            if not exists:
                w.writeheader()
            w.writerow(row)

    def command(self, words):
        c = words[0]
        if c == "scalar":  # scalar TAG STEP VALUE
            self.write(record(event(int(words[2]), time.time(), summary(simple(words[1], float(words[3]))))))
        elif c == "tensor":  # tensor TAG STEP VALUE DTYPE
            dt = {v: k for k, v in DTYPE_NAMES.items()}[words[4]]
            v, _ = tensor_value(words[1], dt, float(words[3]), "val")
            self.write(record(event(int(words[2]), time.time(), summary(v))))
        elif c == "torn":  # torn TAG STEP VALUE: half a record now, the rest at finish
            r = record(event(int(words[2]), time.time(), summary(simple(words[1], float(words[3])))))
            half = len(r) // 2
            self.write(r[:half])
            self.pending = r[half:]
        elif c == "burst":  # burst TAG N: N records of one simple value, the steps going on
            self.step = getattr(self, "step", 0)
            b = bytearray()
            for _ in range(int(words[2])):
                self.step += 1
                b += record(event(self.step, time.time(), summary(simple(words[1], 1.0 / self.step))))
            self.write(bytes(b))
        elif c == "finish":
            self.write(self.pending)
            self.pending = b""
        elif c == "reopen":
            return self.open()
        elif c == "close":
            self.f.close()
            self.f = None
        elif c == "mlflow":  # mlflow KEY STEP VALUE
            self.mlflow(words[1], words[2], words[3])
        elif c == "csv":  # csv K=V ...
            self.csv(dict(w.split("=", 1) for w in words[1:]))
        else:
            raise ValueError("unknown command %r" % c)
        return ""


def job(args):
    opts = dict(zip(args[::2], args[1::2]))
    if opts.get("--lib"):
        ctypes.CDLL(opts["--lib"])  # a library named as a framework's: what the Source recognises
    j = Job(opts.get("--logdir"), opts.get("--mlflow-run"), opts.get("--csv-dir"))
    print("ready", j.path if j.logdir else "", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "exit":
            return
        print("ok", j.command(words), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "fixture":
        fixture(sys.argv[2])
    elif sys.argv[1] == "big":
        big(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "job":
        job(sys.argv[2:])
    else:
        sys.exit(__doc__)
