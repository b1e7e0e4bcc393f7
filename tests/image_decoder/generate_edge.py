#!/usr/bin/env python3
"""Writes the edge-case ImageDecoder fixtures of tests/image_decoder.rs (issue 30, point 12): streams
Pillow decodes although they bend the format, `NAME.bin`, with what Pillow decodes them to,
`NAME.rgb.npy` and `NAME.gray.npy`, as generate.py writes the others.

    python3 tests/image_decoder/generate_edge.py     # needs Pillow and numpy

- `jpeg_no_dht`: a baseline JPEG without its DHT segments (Motion-JPEG's convention: the decoder
  uses the standard tables of Annex K.3, which libjpeg wrote in the first place).
- `jpeg_long_code`: a grey baseline JPEG written here bit by bit with the standard tables, where one
  block's AC codes end with sixteen 1 bits and one more (no code is that long: libjpeg reads 17 bits
  and takes the symbol as 0, an end of block), then more blocks.
- `tiff_ifd_loop`: a TIFF whose first IFD names itself as the next one (Pillow reads the first).

The JPEG 2000 case (lossy, 9/7 wavelet, off by one from OpenJPEG) is documented, not fixed.
"""

import io
import os
import struct

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))

DC_BITS = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
DC_VALS = list(range(12))
AC_BITS = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D]


def segments(data):
    """The JPEG's segments before the first scan's data, as (marker, bytes with marker) pairs, and the rest."""
    at, out = 2, []
    while True:
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        out.append((marker, data[at : at + 2 + length]))
        at += 2 + length
        if marker == 0xDA:
            return out, data[at:]


def without_dht(data):
    """The JPEG with every DHT segment dropped (those between scans of a progressive one too)."""
    out = bytearray(data[:2])
    at = 2
    while at < len(data):
        if data[at] != 0xFF:
            # Entropy-coded data: copy up to the next marker that is not a stuffed byte or RST.
            end = at
            while not (data[end] == 0xFF and data[end + 1] not in (0x00, *range(0xD0, 0xD8))):
                end += 1
            out += data[at:end]
            at = end
            continue
        marker = data[at + 1]
        if marker == 0xD9:
            out += data[at : at + 2]
            break
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker != 0xC4:
            out += data[at : at + 2 + length]
        at += 2 + length
    return bytes(out)


def codes(bits, vals):
    """The canonical Huffman codes of a table: symbol -> (code, length)."""
    table, code, k = {}, 0, 0
    for length, n in enumerate(bits, start=1):
        for _ in range(n):
            table[vals[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return table


class Bits:
    def __init__(self):
        self.bits = []

    def put(self, value, n):
        self.bits += [(value >> (n - 1 - i)) & 1 for i in range(n)]

    def bytes(self):
        bits = self.bits + [1] * (-len(self.bits) % 8)
        out = bytearray()
        for i in range(0, len(bits), 8):
            byte = int("".join(map(str, bits[i : i + 8])), 2)
            out.append(byte)
            if byte == 0xFF:
                out.append(0)
        return bytes(out)


def category(v):
    return 0 if v == 0 else abs(v).bit_length()


def long_code_jpeg(ac_vals):
    """8 rows by 32 columns of grey, four blocks; block 1's AC ends with a 17-bit non-code."""
    dc, ac = codes(DC_BITS, DC_VALS), codes(AC_BITS, ac_vals)
    b = Bits()
    blocks = [(40, [(0, 5), (1, -3)]), (-12, None), (7, [(2, 9)]), (-20, [(0, -1), (0, 2), (5, 4)])]
    for diff, acs in blocks:
        s = category(diff)
        b.put(*dc[s])
        b.put(diff if diff >= 0 else diff + (1 << s) - 1, s)
        if acs is None:
            b.put(0xFFFF, 16)
            b.put(1, 1)
            continue
        for run, v in acs:
            s = category(v)
            b.put(*ac[run << 4 | s])
            b.put(v if v >= 0 else v + (1 << s) - 1, s)
        b.put(*ac[0x00])
    dqt = b"\xff\xdb" + struct.pack(">HB", 67, 0) + bytes([2] * 64)
    sof = b"\xff\xc0" + struct.pack(">HBHHB", 11, 8, 8, 32, 1) + bytes([1, 0x11, 0])
    dht = b"\xff\xc4" + struct.pack(">H", 2 + 17 + 12 + 17 + len(ac_vals))
    dht += bytes([0x00] + DC_BITS + DC_VALS + [0x10] + AC_BITS + ac_vals)
    sos = b"\xff\xda" + struct.pack(">HB", 8, 1) + bytes([1, 0x00, 0, 63, 0])
    return b"\xff\xd8" + dqt + sof + dht + sos + b.bytes() + b"\xff\xd9"


def tiff_loop(image):
    f = io.BytesIO()
    image.save(f, format="TIFF")
    data = bytearray(f.getvalue())
    assert data[:4] == b"II*\x00"
    ifd = struct.unpack("<I", data[4:8])[0]
    n = struct.unpack("<H", data[ifd : ifd + 2])[0]
    link = ifd + 2 + 12 * n
    data[link : link + 4] = struct.pack("<I", ifd)
    return bytes(data)


def natural(r, w, h):
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / max(w - 1, 1), y * 255 / max(h - 1, 1), (x + y) * 97 % 256], -1)
    return np.clip(base + r.normal(0, 25, base.shape), 0, 255).astype(np.uint8)


def main():
    r = np.random.default_rng(30)
    rgb = Image.fromarray(natural(r, 21, 13))
    f = io.BytesIO()
    rgb.save(f, format="JPEG", quality=80)
    baseline = f.getvalue()
    # The AC luminance symbols of Annex K.3, in the order libjpeg writes them in its DHT.
    first, _ = segments(baseline)
    dht = b"".join(seg[4:] for marker, seg in first if marker == 0xC4)
    at, ac_vals = 0, None
    while at < len(dht):
        cls_id, bits = dht[at], list(dht[at + 1 : at + 17])
        n = sum(bits)
        if cls_id == 0x10:
            assert bits == AC_BITS
            ac_vals = list(dht[at + 17 : at + 17 + n])
        at += 17 + n
    fixtures = {
        "jpeg_no_dht": without_dht(baseline),
        "jpeg_long_code": long_code_jpeg(ac_vals),
        "tiff_ifd_loop": tiff_loop(rgb),
    }
    for name, data in fixtures.items():
        decoded = Image.open(io.BytesIO(data))
        decoded.load()
        with open(os.path.join(HERE, f"{name}.bin"), "wb") as out:
            out.write(data)
        np.save(os.path.join(HERE, f"{name}.rgb.npy"), np.array(decoded.convert("RGB")))
        np.save(os.path.join(HERE, f"{name}.gray.npy"), np.array(decoded.convert("L"))[:, :, None])
    print(f"{len(fixtures)} fixtures")


if __name__ == "__main__":
    main()
