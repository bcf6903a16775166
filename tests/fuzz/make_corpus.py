#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora and regression inputs (docs/fuzzing.md).

    tests/fuzz/make_corpus.py NCCLZ_BINARY

Seeds: small streams of real data slices (tests/data) for every quantizer and coder, written by
`ncclz codec --out`; round-trip cases (8 choice bytes + data); quant specs. Regressions: one input
per class of hostile input the decoders and parsers once mishandled (issue 28), each stream
header or frame edit with its checksums recomputed, so that it reaches the check it targets.
"""
import os, struct, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, '..', 'data')
NCCLZ = sys.argv[1]


def fnv1a(b):
    h = 2166136261
    for x in b:
        h = ((h ^ x) * 16777619) & 0xFFFFFFFF
    return h


def payload_check(p):
    s = 0
    padded = p + b'\0' * (-len(p) % 4)
    for i in range(len(padded) // 4):
        s = (s + struct.unpack_from('<I', padded, 4 * i)[0] * (2 * i + 1)) & 0xFFFFFFFF
    return s ^ len(p)


def reseal(b, frames=True):
    """Recomputes the stream header check and, walking the frames, each payload and header check."""
    b = bytearray(b)
    struct.pack_into('<I', b, 60, fnv1a(b[:60]))
    off = 64
    while frames and off + 64 <= len(b):
        pay = struct.unpack_from('<I', b, off + 16)[0]
        end = min(off + 64 + pay, len(b))
        struct.pack_into('<I', b, off + 52, payload_check(bytes(b[off + 64:end])))
        struct.pack_into('<I', b, off + 60, fnv1a(b[off:off + 60]))
        off += 64 + pay
    return bytes(b)


def slice_f32(name, start, count):
    with open(os.path.join(DATA, name), 'rb') as f:
        f.seek(4 * start)
        return f.read(4 * count)


def write(dirname, name, data):
    d = os.path.join(HERE, dirname)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def encode(raw, args):
    with tempfile.TemporaryDirectory() as t:
        src, out = os.path.join(t, 'in.f32'), os.path.join(t, 'out.nczs')
        with open(src, 'wb') as f:
            f.write(raw)
        subprocess.run([NCCLZ, 'codec', '--input', src, '--out', out, '--repeat', '1'] + args,
                       check=True, stdout=subprocess.DEVNULL)
        with open(out, 'rb') as f:
            return f.read()


def to_f16(raw):
    """The same values as float16 (in degrees C, so that they fit its range)."""
    vals = struct.unpack('<%df' % (len(raw) // 4), raw)
    return struct.pack('<%de' % len(vals), *[v - 273.15 for v in vals])


def pop_with_fill(count):
    """A window of pop_ocean_t with land points (fill 9.96921e36) among ocean values."""
    with open(os.path.join(DATA, 'pop_ocean_t_384x320.f32'), 'rb') as f:
        v = f.read()
    vals = struct.unpack('<%df' % (len(v) // 4), v)
    for start in range(0, len(vals) - count, 320):
        fill = sum(1 for x in vals[start:start + count] if x > 1e30)
        if count // 8 < fill < count // 2:
            return v[4 * start:4 * (start + count)]
    raise SystemExit('no window with fill values')


def streams():
    t = slice_f32('trefht_member57_8x64x128.f32', 0, 512)
    g = slice_f32('resnet18_rank0_64k.f32', 0, 512)
    p = pop_with_fill(256)
    cases = {
        'none_huffman': (t, ['--quant', 'none', '--coder', 'huffman', '--chunk', '1K']),
        'none_fixedlen_bf16': (t, ['--dtype', 'bf16', '--quant', 'none', '--coder', 'fixedlen', '--chunk', '512']),
        'eb_abs_raw': (t, ['--quant', 'eb:abs=0.05', '--coder', 'raw', '--chunk', '1K']),
        'eb_lorenzo1_huffman': (t, ['--quant', 'eb:abs=0.01,lorenzo=1d', '--coder', 'huffman', '--chunk', '1K']),
        'eb_lorenzo2_fixedlen': (t, ['--dims', '16x32', '--quant', 'eb:rel=1e-3,lorenzo=2d', '--coder', 'fixedlen',
                                     '--chunk', '1K']),
        'eb_lorenzo3_huffman': (t, ['--dims', '4x8x16', '--quant', 'eb:rel=1e-4,lorenzo=3d', '--coder', 'huffman',
                                    '--chunk', '1K', '--segment', '64']),
        'eb_fill_lorenzo2': (p, ['--dims', '8x32', '--quant', 'eb:abs=0.1,lorenzo=2d,fill=9.97e36', '--coder', 'huffman',
                                 '--chunk', '512']),
        'eb_f16_fixedlen': (to_f16(t), ['--dtype', 'f16', '--quant', 'eb:abs=0.5', '--coder', 'fixedlen', '--chunk', '256']),
        'qsgd4_huffman': (g, ['--quant', 'qsgd:bits=4,bucket=64', '--coder', 'huffman', '--chunk', '1K']),
        'qsgd8_fixedlen': (g, ['--quant', 'qsgd:bits=8,bucket=100', '--coder', 'fixedlen', '--chunk', '800']),
        'qsgd2_raw': (g[:1024], ['--quant', 'qsgd:bits=2,bucket=32,seed=7', '--coder', 'raw', '--chunk', '512']),
    }
    out = {}
    for name, (raw, args) in cases.items():
        out[name] = encode(raw, args)
        write('corpus/stream', name + '.nczs', out[name])
    return out


def edit(b, fmt, at, *values):
    """Packs values at byte `at` and recomputes every checksum."""
    b = bytearray(b)
    struct.pack_into(fmt, b, at, *values)
    return reseal(b)


def every_frame(b, fmt, at, *values):
    """Packs values at byte `at` of every frame header and recomputes every checksum."""
    b, off = bytearray(b), 64
    while off + 64 <= len(b):
        struct.pack_into(fmt, b, off + at, *values)
        off += 64 + struct.unpack_from('<I', b, off + 16)[0]
    return reseal(b)


def stream_regressions(s):
    eb3, q4 = s['eb_lorenzo3_huffman'], s['qsgd4_huffman']
    head = bytearray(eb3[:64])  # header-only streams: n_elems 0, n_frames 0
    struct.pack_into('<QIIII', head, 8, 0, 0x80000000, 0x80000000, 4, 0)
    cases = {
        # lorenzo=3, n_elems=0, dims 2^31 x 2^31 x 4: the product wraps to 0; a heap overflow in lz_row_inverse
        'dims_wrap_to_zero': reseal(head),
        # dims 0xFFFFFFFF x 0xFFFFFFFF x 0: an endless loop over empty rows
        'dims_zero_row_loop': reseal(bytes(head[:16]) + struct.pack('<III', 0xFFFFFFFF, 0xFFFFFFFF, 0) + bytes(head[28:])),
        'dims_wrap_to_n': edit(eb3, '<III', 16, 0x80000000, 0x80000000, 512 + 4),
        'dims_product_differs': edit(eb3, '<I', 16, 5),
        'dims_zero_with_lorenzo': edit(eb3, '<III', 16, 0, 0, 0),
        # qsgd_bits never checked: garbage (uninitialised memory) with exit 0
        'qsgd_bits_3': edit(q4, '<B', 45, 3),
        'qsgd_bits_0': edit(q4, '<B', 45, 0),
        'qsgd_bits_255': edit(q4, '<B', 45, 255),
        'qsgd_bucket_0': edit(q4, '<I', 48, 0),
        'qsgd_bits_differ_from_frames': edit(q4, '<B', 45, 8),
        'qsgd_lorenzo': edit(q4, '<B', 7, 2),
        'qsgd_nan_scale': edit(q4, '<I', 64 + 64, 0x7FC00000),
        'qsgd_negative_scale': edit(q4, '<f', 64 + 64, -1.0),
        'eb_bound_nan': edit(eb3, '<d', 32, float('nan')),
        'eb_bound_zero': edit(eb3, '<d', 32, 0.0),
        'eb_bound_negative': edit(eb3, '<d', 32, -0.01),
        'eb_bound_inf': edit(eb3, '<d', 32, float('inf')),
        'eb_bound_huge_overflows_float': every_frame(edit(eb3, '<d', 32, 1e300), '<d', 40, 1e300),
        'fill_nan': edit(edit(eb3, '<B', 44, 1), '<I', 40, 0x7FC00000),
        'fill_bits_without_flag': edit(eb3, '<f', 40, 1.5),
        'n_elems_huge': edit(eb3, '<Q', 8, (1 << 64) - 1),
        'n_elems_more_than_frames': edit(eb3, '<QIII', 8, 513, 1, 1, 513),
        'n_elems_fewer_than_frames': edit(edit(eb3, '<Q', 8, 256), '<III', 16, 2, 8, 16),
        'n_frames_huge': edit(eb3, '<I', 28, 0xFFFFFFFF),
        'frame_lorenzo_differs': edit(eb3, '<B', 64 + 8, 1),
        'frame_scales_disagree': edit(edit(q4, '<I', 64 + 12, 63), '<I', 64 + 56, 63 * 4),
        'reserved_bytes': edit(eb3, '<H', 46, 1),
    }
    for name, b in cases.items():
        write('regress/stream', name + '.nczs', b)


def roundtrip():
    t = slice_f32('trefht_member57_8x64x128.f32', 0, 512)
    g = slice_f32('resnet18_rank0_64k.f32', 0, 512)
    p = pop_with_fill(256)
    # byte 0: quant | lorenzo << 2 | fill << 4 | raw dims << 5; 1: coder (3: auto) | dtype << 2 |
    # transport << 4; 2, 3: bound
    # or bits/bucket; 4: ndims; 5, 6: dims; 7: frame size and coder parameters
    seeds = {
        'none_huffman_f32': (bytes([0, 2, 0, 0, 0, 0, 0, 8]), t),
        'none_fixedlen_bf16': (bytes([0, 1 | 4, 0, 0, 0, 0, 0, 6]), t),
        'eb_abs_lorenzo3': (bytes([1 | 3 << 2, 2, 4, 0, 3, 15, 7, 9]), t),
        'eb_rel_lorenzo2_fixedlen': (bytes([2 | 2 << 2, 1, 10, 128, 2, 31, 0, 7]), t),
        'eb_fill_lorenzo1': (bytes([1 | 1 << 2 | 16, 2, 3, 0, 1, 0, 0, 8]), p),
        'qsgd4_huffman': (bytes([3, 2, 1, 63, 0, 0, 0, 9]), g),
        'qsgd8_raw_f16': (bytes([3, 8, 2, 99, 0, 0, 0, 5]), g),
        'eb_lorenzo3_auto_net': (bytes([1 | 3 << 2, 3 | 2 << 4, 6, 0, 3, 15, 7, 10]), t),
        'qsgd8_auto_nvlink': (bytes([3, 3, 2, 255, 3, 0, 0, 11]), g),
        'none_auto_shm': (bytes([0, 3 | 1 << 4, 0, 0, 0, 0, 0, 9]), g),
    }
    for name, (h, d) in seeds.items():
        write('corpus/roundtrip', name, h + d)
    dims = lambda a, b, c: struct.pack('<III', a, b, c)
    n = (lambda d: len(d) // 4)
    regress = {
        # --dims whose product overflows: 2^31 x 2^31 x 4 wraps to 0, the 3687103364x505754x39569
        'dims_wrap_to_zero': bytes([1 | 3 << 2 | 32, 2, 4, 0, 3, 0, 0, 8]) + dims(0x80000000, 0x80000000, 4) + t,
        'dims_overflow_issue': bytes([1 | 3 << 2 | 32, 2, 4, 0, 3, 0, 0, 8]) + dims(3687103364, 505754, 39569) + t,
        'dims_wrap_to_n': bytes([1 | 1 << 2 | 32, 2, 4, 0, 3, 0, 0, 8]) + dims(0x80000000, 0x80000000, n(t) + 4) + t,
        'dims_zero': bytes([1 | 2 << 2 | 32, 2, 4, 0, 3, 0, 0, 8]) + dims(0xFFFFFFFF, 0xFFFFFFFF, 0) + t,
        'nan_under_eb': bytes([1, 2, 4, 0, 0, 0, 0, 8]) + struct.pack('<f', float('nan')) + t,
        'tiny_bound_below_float_resolution': bytes([1, 2, 47, 0, 0, 0, 0, 8]) + t,
    }
    for name, b in regress.items():
        write('regress/roundtrip', name, b)


def quant_specs():
    seeds = ['none', 'eb:abs=0.01', 'eb:rel=1e-4,lorenzo=3d', 'eb:rel=1e-3,lorenzo=2d,fill=9.97e36',
             'eb:fill=-999,abs=0.5,lorenzo=1d', 'qsgd:bits=8,bucket=512', 'qsgd:bits=2,bucket=64,seed=7',
             'qsgd:bucket=1,bits=4,seed=0xffffffffffffffff', '4MiB', '18446744073709551615', '1.5e-3']
    for i, s in enumerate(seeds):
        write('corpus/quant_spec', 'seed_%02d' % i, s.encode())
    regress = ['eb:abs= 1', 'eb:abs=1 ', 'eb:abs=nan', 'eb:abs=inf', 'eb:abs=0x1p-3', 'eb:abs=1e-400',
               'qsgd:bits=+4,bucket=64', 'qsgd:bits=4,bucket=0x40', 'qsgd:bits=4,bucket=-64',
               'qsgd:bits=4,bucket=4294967296', 'qsgd:bits=4,bucket=64,seed=-1', '-18446744073709551615',
               '+10', 'eb:abs=1,fill=1e39', 'eb:abs=1,,lorenzo=1d', 'eb:abs=1\0,lorenzo=9d']
    regress.append('eb:abs=1e-4\nx')  # a newline echoed in the message made it two lines
    for i, s in enumerate(regress):
        write('regress/quant_spec', 'case_%02d' % i, s.encode())


if __name__ == '__main__':
    stream_regressions(streams())
    roundtrip()
    quant_specs()
