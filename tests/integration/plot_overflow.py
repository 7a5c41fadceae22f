#!/usr/bin/env python3
"""plot_overflow.py SVG PNG-TOOL [TEXT...]: does anything a renderer draws
for SVG fall outside its canvas, or is any TEXT missing from what it draws?
The picture is rendered on a canvas 200 px larger on every side (the
viewBox is widened, nothing else changes); any pixel drawn out there is
text or a line the real canvas would clip.  The rendering is scaled down
(to at most 1200 px across) to keep the pure Python decoding quick: an
overflow still leaves some coverage behind.  Each TEXT (a title, a panel
heading, a legend entry) must appear in the drawn text elements, in
order, however it was wrapped: white space is ignored, since a line may
break between words or inside a long one.  Prints what overflowed where,
or which words are missing, and exits 1, else exits 0."""
import re, struct, subprocess, sys, tempfile, zlib, os
import xml.etree.ElementTree as ET

PAD = 200

def decode_png(data):
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat, w = 8, b'', None
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            assert depth == 8 and ctype == 6 and interlace == 0, (depth, ctype, interlace)
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw, bpp, stride = zlib.decompress(idat), 4, w * 4
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + b) & 255
            elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, rows

svg = open(sys.argv[1], encoding='utf-8').read()

# The text a viewer sees: every <text> element (not the <title> tooltips,
# which hold the whole title whatever is drawn).
drawn = ''.join(''.join(t.itertext()) for t in
                ET.fromstring(svg).iter('{http://www.w3.org/2000/svg}text'))
flat = re.sub(r'\s+', '', drawn)
for want in sys.argv[3:]:
    if re.sub(r'\s+', '', want) not in flat:
        lost = [w for w in want.split() if w not in flat]
        print(f'text not drawn whole: {want!r} (words missing: {lost}); drawn: {drawn!r}')
        sys.exit(1)
m = re.search(r'<svg [^>]*width="(\d+)" height="(\d+)" viewBox="0 0 (\d+) (\d+)"', svg)
W, H = int(m.group(1)), int(m.group(2))
wide = svg.replace(m.group(0), m.group(0).replace(
    f'width="{W}" height="{H}" viewBox="0 0 {W} {H}"',
    f'width="{W + 2 * PAD}" height="{H + 2 * PAD}" viewBox="{-PAD} {-PAD} {W + 2 * PAD} {H + 2 * PAD}"'), 1)
with tempfile.TemporaryDirectory() as d:
    s, p = os.path.join(d, 'w.svg'), os.path.join(d, 'w.png')
    open(s, 'w', encoding='utf-8').write(wide)
    zoom = min(0.5, 1200.0 / (W + 2 * PAD))
    subprocess.run([sys.argv[2], '--zoom', str(zoom), s, '-o', p], check=True)
    w, h, rows = decode_png(open(p, 'rb').read())
# The canvas in rendered pixels; a pixel straddling its edge is inside.
x0, x1 = int(PAD * zoom), -(-int((PAD + W) * zoom * 1000) // 1000)
y0, y1 = int(PAD * zoom), -(-int((PAD + H) * zoom * 1000) // 1000)
bad = []
for y in range(h):
    row = rows[y]
    inside_y = y0 <= y <= y1
    for x in range(w):
        if row[4 * x + 3] and not (inside_y and x0 <= x <= x1):
            bad.append((round(x / zoom) - PAD, round(y / zoom) - PAD))
if bad:
    xs, ys = [b[0] for b in bad], [b[1] for b in bad]
    print(f'{len(bad)} pixels drawn outside the {W}x{H} canvas, x {min(xs)}..{max(xs)}, '
          f'y {min(ys)}..{max(ys)}')
    sys.exit(1)
print(f'nothing outside the {W}x{H} canvas')
