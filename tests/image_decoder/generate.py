#!/usr/bin/env python3
"""Writes the ImageDecoder fixtures of tests/image_decoder.rs: small images encoded by Pillow in each
format and variant sliceops decodes, `NAME.bin`, with what Pillow decodes them to, `NAME.rgb.npy`
(`convert("RGB")`) and `NAME.gray.npy` (`convert("L")`, as `[H, W, 1]`), the reference's semantics.

    python3 tests/image_decoder/generate.py     # needs Pillow and numpy (not in the CI venv)

The pixels come from a seeded generator (gradients plus noise, odd sizes so that chroma planes and
blocks are partial); the encoders are Pillow's (libjpeg-turbo, libpng, libtiff, libwebp, OpenJPEG),
so the files change only with them.
"""

import io
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def natural(r, w, h):
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / max(w - 1, 1), y * 255 / max(h - 1, 1), (x + y) * 97 % 256], -1)
    return np.clip(base + r.normal(0, 25, base.shape), 0, 255).astype(np.uint8)


def main():
    r = np.random.default_rng(20)
    rgb = Image.fromarray(natural(r, 19, 11))
    grey = rgb.convert("L")
    variants = [
        ("jpeg_444", rgb, "JPEG", dict(subsampling=0, quality=85)),
        ("jpeg_422", rgb, "JPEG", dict(subsampling=1, quality=85)),
        ("jpeg_420_restart", rgb, "JPEG", dict(subsampling=2, quality=60, restart_marker_blocks=1)),
        ("jpeg_411_optimized", rgb, "JPEG", dict(subsampling="4:1:1", optimize=True)),
        ("jpeg_grey", grey, "JPEG", dict(quality=90)),
        ("jpeg_progressive", rgb, "JPEG", dict(progressive=True)),
        ("png_palette", rgb.quantize(5), "PNG", {}),
        ("png_grey_alpha", rgb.convert("LA"), "PNG", {}),
        ("png_bilevel", grey.convert("1"), "PNG", {}),
        ("bmp_palette", rgb.quantize(13), "BMP", {}),
        ("bmp_bilevel", grey.convert("1"), "BMP", {}),
        ("bmp_rgba", rgb.convert("RGBA"), "BMP", {}),
        ("pgm", grey, "PPM", {}),
        ("pbm", grey.convert("1"), "PPM", {}),
        ("tiff_lzw_rgba", rgb.convert("RGBA"), "TIFF", dict(compression="tiff_lzw")),
        ("tiff_deflate_grey", grey, "TIFF", dict(compression="tiff_adobe_deflate")),
        ("webp_lossless_alpha", rgb.convert("RGBA"), "WEBP", dict(lossless=True)),
        ("webp_lossy_alpha", rgb.convert("RGBA"), "WEBP", dict(quality=50)),
        ("j2k_codestream_grey", grey, "JPEG2000", dict(no_jp2=True)),
    ]
    for name, image, fmt, options in variants:
        f = io.BytesIO()
        image.save(f, format=fmt, **options)
        data = f.getvalue()
        with open(os.path.join(HERE, f"{name}.bin"), "wb") as out:
            out.write(data)
        decoded = Image.open(io.BytesIO(data))
        np.save(os.path.join(HERE, f"{name}.rgb.npy"), np.array(decoded.convert("RGB")))
        np.save(os.path.join(HERE, f"{name}.gray.npy"), np.array(decoded.convert("L"))[:, :, None])
    print(f"{len(variants)} fixtures")


if __name__ == "__main__":
    main()
