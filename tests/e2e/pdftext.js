// The text of a PDF made by Chromium's print-to-PDF (Skia): enough of the
// format to read it back in a test, with node's zlib and no dependency.
// Objects are found by `N 0 obj ... endobj`; streams are inflated; each
// page's fonts map glyph codes to text through their ToUnicode CMaps; text
// shown with Tj and TJ is collected, one line per text object (BT ... ET),
// ligatures read as their letters.

import zlib from 'node:zlib';

function objects(pdf) {
  const text = pdf.toString('latin1');
  const found = new Map();
  const re = /(\d+) 0 obj\s*/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const start = m.index + m[0].length;
    const end = text.indexOf('endobj', start);
    const body = text.slice(start, end);
    const s = body.indexOf('stream');
    let dict = body;
    let data = null;
    if (s >= 0 && /\/Length (\d+)/.test(body.slice(0, s))) {
      dict = body.slice(0, s);
      const length = Number(/\/Length (\d+)/.exec(dict)[1]);
      let from = start + s + 'stream'.length;
      if (text[from] === '\r') from += 1;
      if (text[from] === '\n') from += 1;
      const raw = pdf.subarray(from, from + length);
      data = /\/FlateDecode/.test(dict) ? zlib.inflateSync(raw) : raw;
    }
    found.set(Number(m[1]), { dict, data });
    re.lastIndex = end;
  }
  return found;
}

/** A ToUnicode CMap as code (hex) -> text. */
function cmap(data) {
  const text = data.toString('latin1');
  const map = new Map();
  const hex = (h) => String.fromCodePoint(...(h.match(/.{4}/g) ?? []).map((u) => parseInt(u, 16)));
  for (const block of text.matchAll(/beginbfchar([\s\S]*?)endbfchar/g)) {
    for (const [, code, unicode] of block[1].matchAll(/<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>/g)) map.set(code.toUpperCase(), hex(unicode));
  }
  for (const block of text.matchAll(/beginbfrange([\s\S]*?)endbfrange/g)) {
    for (const [, lo, hi, first] of block[1].matchAll(/<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>/g)) {
      const base = parseInt(first, 16);
      for (let c = parseInt(lo, 16); c <= parseInt(hi, 16); c += 1) map.set(c.toString(16).toUpperCase().padStart(lo.length, '0'), String.fromCodePoint(base + c - parseInt(lo, 16)));
    }
  }
  return map;
}

/** `{pages: [{width, height, text}], text}` of a PDF's bytes. */
export function pdfText(pdf) {
  const objs = objects(pdf);
  const ref = (dict, name) => Number(new RegExp(`/${name} (\\d+) 0 R`).exec(dict)?.[1]);
  // Pages in the order of the page tree's `/Kids` (Skia writes one flat list).
  const kids = [...objs.values()].find((o) => /\/Type \/Pages\b/.test(o.dict))?.dict.match(/\/Kids \[([^\]]*)\]/)?.[1] ?? '';
  const order = [...kids.matchAll(/(\d+) 0 R/g)].map((m) => Number(m[1]));
  const pages = [];
  for (const id of order) {
    const { dict } = objs.get(id);
    const fonts = new Map();
    const fontDict = /\/Font <<([^>]*)>>/.exec(dict)?.[1] ?? '';
    for (const [, name, id] of fontDict.matchAll(/\/(\S+) (\d+) 0 R/g)) {
      const toUnicode = ref(objs.get(Number(id))?.dict ?? '', 'ToUnicode');
      fonts.set(name, toUnicode ? cmap(objs.get(toUnicode).data) : new Map());
    }
    const box = /\/MediaBox \[([^\]]+)\]/.exec(dict)[1].trim().split(/\s+/).map(Number);
    const contents = objs.get(ref(dict, 'Contents'))?.data?.toString('latin1') ?? '';
    const lines = [];
    for (const [, block] of contents.matchAll(/BT([\s\S]*?)ET/g)) {
      let font = new Map();
      let line = '';
      for (const op of block.matchAll(/\/(\S+) [\d.]+ Tf|<([0-9A-Fa-f]*)> Tj|\[([^\]]*)\] TJ/g)) {
        if (op[1]) font = fonts.get(op[1]) ?? new Map();
        const strings = op[2] !== undefined ? [op[2]] : op[3] !== undefined ? [...op[3].matchAll(/<([0-9A-Fa-f]*)>/g)].map((m) => m[1]) : [];
        for (const s of strings) for (const code of s.match(/.{4}/g) ?? []) line += font.get(code.toUpperCase()) ?? '';
      }
      // NFKC: the ligatures a font draws (ﬀ, ﬁ) are read as their letters.
      if (line.trim()) lines.push(line.normalize('NFKC'));
    }
    pages.push({ width: box[2] - box[0], height: box[3] - box[1], text: lines.join('\n') });
  }
  return { pages, text: pages.map((p) => p.text).join('\n') };
}
