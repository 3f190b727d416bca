// memscope serve: the page. Everything it shows is computed by the server
// (/api/...); this file only draws it and turns the mouse into queries.
'use strict';

const $ = (id) => document.getElementById(id);
const ms = window.memscope = { view: 0, requests: 0, lastMs: 0, errors: [] };

// Sizes and times as memscope prints them: memscopeUnits (/units.js, the
// report's units.js).
const fmtBytes = memscopeUnits.bytes;
function fmtX(x, axis) {
  return axis === 'time_us' ? memscopeUnits.duration(x) : 'event ' + x;
}
function esc(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));
}
async function api(path, params) {
  const q = new URLSearchParams(Object.assign({ v: ms.view }, params || {}));
  const r = await fetch('/api/' + path + '?' + q);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}
// The sites' colours: twelve chosen to be told apart (each pair at least
// 27 CIE76 ΔE apart drawn at 80% over white, and from the grey of "every
// other site"), one per site of a timeline answer (it names at most 12).
// A site keeps its colour from one answer to the next while no other site
// of the answer has it.
const SITE_COLORS = ['#4e79a7', '#d35400', '#e84393', '#3a6b1b', '#6c5ce7', '#edc948', '#00b894', '#6b1b3a', '#ff9da7', '#8cd17d', '#5a3d8a', '#9c755f'];
const OTHER_COLOR = 'rgba(144,164,174,.55)';
const siteSlot = new Map(); // site label → its colour's index
function siteColors(labels) {
  const used = new Set(), out = new Map();
  for (const l of labels) {
    const k = siteSlot.get(l);
    if (k !== undefined && !used.has(k)) { used.add(k); out.set(l, k); }
  }
  for (const l of labels) {
    if (out.has(l)) continue;
    let k = 0;
    while (used.has(k) && k < SITE_COLORS.length - 1) k++;
    used.add(k); out.set(l, k); siteSlot.set(l, k);
  }
  return out;
}
function rgba(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a + ')';
}
// A band's colour: its site's when the site has a legend row, else a grey;
// lighter and darker in turn so that neighbouring bands stay apart.
function bandColor(slots, label, i) {
  const k = slots.get(label);
  return k === undefined ? (i % 2 ? '#b0bec5' : '#cfd8dc') : rgba(SITE_COLORS[k], i % 2 ? 0.95 : 0.75);
}
const RESERVED_COLOR = '#6a1b9a';
const phaseColor = { forward: 'rgba(33,150,243,.10)', backward: 'rgba(244,67,54,.09)', optimizer: 'rgba(76,175,80,.12)' };

function stackHTML(frames, hideFolded) {
  if (!frames || frames.length === 0) return '<div class="stack muted">(no stack recorded)</div>';
  return '<div class="stack' + (hideFolded ? ' hidefold' : '') + '">' + frames.map((f) =>
    '<div class="' + (f.folded ? 'folded' : 'kept') + '">' + esc(f.name) + ' ' + esc(f.filename) + ':' + f.line + '</div>').join('') + '</div>';
}

// ---- the tooltip

const tip = $('tip');
function showTip(ev, html) {
  tip.innerHTML = html;
  tip.style.display = 'block';
  const w = tip.offsetWidth, h = tip.offsetHeight;
  let x = ev.clientX + 14, y = ev.clientY + 14;
  if (x + w > innerWidth) x = Math.max(0, ev.clientX - w - 14);
  if (y + h > innerHeight) y = Math.max(0, ev.clientY - h - 14);
  tip.style.left = x + 'px';
  tip.style.top = y + 'px';
}
function hideTip() { tip.style.display = 'none'; }

const allocCache = new Map();
function allocInfo(id) {
  const key = ms.view + ':' + id;
  if (!allocCache.has(key)) allocCache.set(key, api('alloc', { id }));
  return allocCache.get(key);
}

// ---- the timeline

const tl = { data: null, from: 0, to: 0, span: 0, axis: 'event', pin: null, seq: 0 };
const M = { left: 70, right: 10, top: 10, bottom: 34 };
const cv = $('tl');

function plotBox() {
  const w = cv.clientWidth, h = cv.height;
  return { l: M.left, t: M.top, w: Math.max(10, w - M.left - M.right), h: h - M.top - M.bottom };
}

async function loadTimeline(from, to, wait) {
  const box = plotBox();
  const seq = ++tl.seq;
  const t0 = performance.now();
  const params = { px: Math.max(1, Math.round(box.w)) };
  if (from !== undefined) { params.from = Math.round(from); params.to = Math.round(to); }
  if (wait) params.wait = 1;
  const d = await api('timeline', params);
  const dt = performance.now() - t0;
  if (seq !== tl.seq) return; // a later zoom overtook this one
  ms.requests++;
  ms.lastMs = dt;
  ms.partial = !!d.partial;
  tl.data = d; tl.px = params.px; tl.from = d.from; tl.to = d.to; tl.span = d.span; tl.axis = d.axis;
  $('tl-status').textContent = fmtX(d.from, d.axis) + ' – ' + fmtX(d.to, d.axis) + ' · ' + d.events + ' events · ' +
    (d.partial ? 'an overview while the server indexes the allocations…' :
      d.bands.length + ' of ' + d.candidates + ' allocations drawn one by one') + ' · answered in ' + dt.toFixed(0) + ' ms';
  drawTimeline();
  if (d.partial) { await loadTimeline(from, to, true); return; } // the bands, once the index is built
  if (!tl.whole || tl.whole.view !== ms.view) {
    // The whole recording once, for the overview strip shown while zoomed.
    tl.whole = { view: ms.view, data: await api('timeline', { px: params.px, bands: 0 }) };
  }
  drawOverview();
}

function drawTimeline() {
  const d = tl.data;
  if (!d) return;
  const dpr = window.devicePixelRatio || 1;
  const W = cv.clientWidth, H = cv.height;
  if (cv.width !== W) cv.width = W;
  const g = cv.getContext('2d');
  g.setTransform(1, 0, 0, 1, 0, 0);
  g.clearRect(0, 0, cv.width, cv.height);
  const box = plotBox();
  const cols = d.columns;
  const showReserved = $('tl-reserved').checked;
  let ymax = 1;
  for (const v of d.max) ymax = Math.max(ymax, v);
  if (showReserved) for (const v of d.reserved_max) ymax = Math.max(ymax, v);
  ymax *= 1.05;
  const labels = d.rest.filter((r) => r.site >= 0).map((r) => d.sites[r.site]);
  const slots = siteColors(labels);
  const restColor = (r) => r.site < 0 ? OTHER_COLOR : rgba(SITE_COLORS[slots.get(d.sites[r.site])], 0.8);
  const range = Math.max(1, d.to - d.from + 1);
  const xOfAxis = (x) => box.l + (x - d.from) / range * box.w;
  const xOfCol = (c) => box.l + c / Math.max(cols, 1) * box.w;
  const yOf = (b) => box.t + box.h - b / ymax * box.h;
  // phases
  g.font = '11px system-ui, sans-serif';
  d.phases.forEach((p, i) => {
    const x0 = Math.max(box.l, xOfAxis(p.x0)), x1 = Math.min(box.l + box.w, xOfAxis(p.x1 + (d.axis === 'event' ? 1 : 0)));
    if (x1 <= x0) return;
    // A step or a run of steps: every other one darker, so that runs of
    // two steps (which all start at an odd step) still alternate.
    g.fillStyle = phaseColor[p.phase] || (i % 2 ? 'rgba(120,144,156,.08)' : 'rgba(120,144,156,.16)');
    g.fillRect(x0, box.t, x1 - x0, box.h);
    if (x1 - x0 > 50) { g.fillStyle = '#607d8b'; g.fillText(p.name, x0 + 3, box.t + 11, x1 - x0 - 6); }
  });
  // bands
  for (let i = 0; i < d.bands.length; i++) {
    const b = d.bands[i];
    g.fillStyle = bandColor(slots, d.sites[b.site], i);
    const off = b.off;
    for (let k = 0; k < off.length; k += 2) {
      const ca = off[k], cb = k + 2 < off.length ? off[k + 2] - 1 : b.c1;
      const y1 = yOf(off[k + 1]), y0 = yOf(off[k + 1] + b.size);
      g.fillRect(xOfCol(ca), y0, Math.max(1, xOfCol(cb + 1) - xOfCol(ca)), Math.max(0.5, y1 - y0));
    }
  }
  // the rest, by site, above the bands
  for (let c = 0; c < cols; c++) {
    let base = d.bands_at[c];
    const x = xOfCol(c), w = Math.max(1, xOfCol(c + 1) - x);
    for (let r = 0; r < d.rest.length; r++) {
      const v = d.rest[r].bytes[c];
      if (v <= 0) continue;
      g.fillStyle = restColor(d.rest[r]);
      g.fillRect(x, yOf(base + v), w, yOf(base) - yOf(base + v));
      base += v;
    }
  }
  // reserved: what the segments hold above allocated (cached, free to
  // the allocator), and its line; each column's segment events below the
  // axis, reserving more up, releasing down
  if (showReserved && d.reserved_max.length === cols) {
    g.fillStyle = 'rgba(106,27,154,.07)';
    for (let c = 0; c < cols; c++) {
      const x = xOfCol(c), w = Math.max(1, xOfCol(c + 1) - x), top = yOf(d.reserved_max[c]), base = yOf(d.max[c]);
      if (base > top) g.fillRect(x, top, w, base - top);
    }
    g.strokeStyle = RESERVED_COLOR; g.lineWidth = 1.2;
    g.beginPath();
    for (let c = 0; c < cols; c++) {
      const y = yOf(d.reserved_max[c]);
      if (c === 0) g.moveTo(xOfCol(c), y); else g.lineTo(xOfCol(c), y);
      g.lineTo(xOfCol(c + 1), y);
    }
    g.stroke();
    const y0 = box.t + box.h + 1;
    for (let c = 0; c < cols; c++) {
      const x = xOfCol(c), w = Math.max(1, xOfCol(c + 1) - x);
      if (d.reserved_up[c]) { g.fillStyle = RESERVED_COLOR; g.fillRect(x, y0, w, 3); }
      if (d.reserved_down[c]) { g.fillStyle = '#ef6c00'; g.fillRect(x, y0 + 3, w, 3); }
    }
  }
  // the peak and each OOM
  const s = ms.summary;
  if (s) {
    const marks = [[s.view.peaks.allocated, '#212121', 'peak']].concat(s.view.oom_at.map((o, i) => [o, '#c62828', 'OOM ' + (i + 1)]));
    for (const [p, color, label] of marks) {
      if (p.event < 0 || p.x < d.from || p.x > d.to) continue;
      const x = xOfAxis(p.x + (d.axis === 'event' ? 0.5 : 0));
      g.strokeStyle = color; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(x, box.t); g.lineTo(x, box.t + box.h); g.stroke(); g.setLineDash([]);
      g.fillStyle = color; g.fillText(label, x + 3, box.t + 24);
    }
  }
  // allocated: the most and least in each column
  g.lineWidth = 1.2;
  for (const [arr, color] of [[d.max, '#212121'], [d.min, 'rgba(33,33,33,.35)']]) {
    g.strokeStyle = color;
    g.beginPath();
    for (let c = 0; c < cols; c++) {
      const x = (xOfCol(c) + xOfCol(c + 1)) / 2, y = yOf(arr[c]);
      if (c === 0) g.moveTo(x, y); else g.lineTo(x, y);
    }
    g.stroke();
  }
  // axes
  g.fillStyle = '#455a64';
  g.strokeStyle = '#b0bec5';
  g.beginPath();
  g.moveTo(box.l, box.t); g.lineTo(box.l, box.t + box.h); g.lineTo(box.l + box.w, box.t + box.h);
  g.stroke();
  const step = niceBytes(ymax / 5);
  g.textAlign = 'right';
  for (let v = 0; v <= ymax; v += step) {
    const y = yOf(v);
    g.fillText(fmtBytes(v), box.l - 4, y + 4);
    g.strokeStyle = 'rgba(0,0,0,.06)';
    g.beginPath(); g.moveTo(box.l, y); g.lineTo(box.l + box.w, y); g.stroke();
  }
  for (let k = 0; k <= 6; k++) {
    const x = d.from + (d.to - d.from) * k / 6;
    g.textAlign = k === 0 ? 'left' : k === 6 ? 'right' : 'center'; // no label clipped at the ends
    g.fillText(fmtX(Math.round(x), d.axis), box.l + box.w * k / 6, box.t + box.h + 22);
  }
  g.textAlign = 'left';
  $('legend').innerHTML = d.rest.map((r) => '<span class="site"><i style="background:' + restColor(r) + '"></i>' +
    esc(r.site < 0 ? 'every other site' : d.sites[r.site]) + '</span>').join('') +
    '<span class="muted">(the smaller allocations, merged per site above the ' + d.bands.length + ' largest, which are drawn one by one in their site\'s colour)</span>' +
    (showReserved ? '<span><i style="background:' + RESERVED_COLOR + ';height:2px;vertical-align:3px"></i>reserved: the segments the caching allocator holds; shaded above allocated, what they hold free. Below the axis: ' +
      '<i style="background:' + RESERVED_COLOR + ';height:3px"></i>segments reserved (cudaMalloc), <i style="background:#ef6c00;height:3px"></i>released</span>' : '');
  Object.assign(cv.dataset, { drawn: String(ms.requests), bands: String(d.bands.length), columns: String(cols),
    from: String(d.from), to: String(d.to), ymax: String(ymax), plotLeft: String(box.l), plotTop: String(box.t),
    plotWidth: String(box.w), plotHeight: String(box.h), px: String(tl.px), lastMs: ms.lastMs.toFixed(1),
    reservedShown: String(showReserved), reservedTop: String(showReserved && cols ? Math.max(...d.reserved_max) : 0) });
  tl.geom = { box, ymax, cols, xOfCol, yOf };
  drawOverview();
}

// ---- the overview strip: the whole recording, the window drawn on it;
// shown while zoomed in. A click centres the window there.

const ov = $('ov');
function drawOverview() {
  const w = tl.whole && tl.whole.view === ms.view ? tl.whole.data : null;
  const zoomed = tl.data && w && (tl.data.from > 0 || tl.data.to < w.span);
  ov.hidden = !zoomed;
  if (!zoomed) { delete ov.dataset.from; return; }
  const W = ov.clientWidth, H = ov.height, box = plotBox();
  if (ov.width !== W) ov.width = W;
  const g = ov.getContext('2d');
  g.clearRect(0, 0, W, H);
  let top = 1;
  for (const v of w.max) top = Math.max(top, v);
  for (const v of w.reserved_max) top = Math.max(top, v);
  const cols = w.columns, xOf = (c) => box.l + c / Math.max(cols, 1) * box.w, yOf = (b) => H - 2 - b / top * (H - 4);
  g.fillStyle = '#eceff1'; g.fillRect(box.l, 0, box.w, H);
  g.fillStyle = 'rgba(33,33,33,.35)';
  for (let c = 0; c < cols; c++) g.fillRect(xOf(c), yOf(w.max[c]), Math.max(1, xOf(c + 1) - xOf(c)), H - 2 - yOf(w.max[c]));
  g.strokeStyle = RESERVED_COLOR; g.beginPath();
  for (let c = 0; c < cols; c++) { const y = yOf(w.reserved_max[c]); if (c === 0) g.moveTo(xOf(c), y); else g.lineTo(xOf(c), y); g.lineTo(xOf(c + 1), y); }
  g.stroke();
  const span = Math.max(1, w.span), x0 = box.l + tl.data.from / span * box.w, x1 = box.l + tl.data.to / span * box.w;
  g.fillStyle = 'rgba(25,118,210,.25)'; g.fillRect(x0, 0, Math.max(2, x1 - x0), H);
  g.strokeStyle = '#1976d2'; g.strokeRect(x0 + 0.5, 0.5, Math.max(2, x1 - x0), H - 1);
  Object.assign(ov.dataset, { from: String(tl.data.from), to: String(tl.data.to), span: String(w.span), x0: String(x0), x1: String(x1) });
}
ov.addEventListener('click', (ev) => {
  const w = tl.whole && tl.whole.data;
  if (!w || !tl.data) return;
  const box = plotBox(), r = ov.getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (ev.clientX - r.left - box.l) / box.w));
  const width = tl.data.to - tl.data.from, at = f * w.span;
  let from = Math.max(0, at - width / 2), to = from + width;
  if (to > w.span) { from = Math.max(0, w.span - width); to = w.span; }
  zoomTo(from, to);
});
$('tl-reserved').addEventListener('change', () => drawTimeline());

// niceBytes rounds a tick step up to a power of two of a binary unit
// (256 MiB, 1 GiB…), so that ticks fall on round binary sizes.
function niceBytes(v) {
  if (!(v > 0)) return 1;
  return Math.pow(2, Math.ceil(Math.log2(v)));
}

// hit returns what is under the mouse: a band, a rest site, or a column.
function hit(ev) {
  const d = tl.data, gm = tl.geom;
  if (!d || !gm) return null;
  const r = cv.getBoundingClientRect();
  const px = ev.clientX - r.left, py = ev.clientY - r.top;
  const { box, ymax, cols } = gm;
  if (px < box.l || px > box.l + box.w || py < box.t || py > box.t + box.h) return null;
  const c = Math.min(cols - 1, Math.floor((px - box.l) / box.w * cols));
  const bytes = (box.t + box.h - py) / box.h * ymax;
  for (const b of d.bands) {
    if (c < b.c0 || c > b.c1) continue;
    let off = 0;
    for (let k = 0; k < b.off.length && b.off[k] <= c; k += 2) off = b.off[k + 1];
    if (bytes >= off && bytes < off + b.size) return { band: b, col: c };
  }
  let base = d.bands_at[c];
  for (const rr of d.rest) {
    const v = rr.bytes[c];
    if (bytes >= base && bytes < base + v) return { rest: rr, col: c };
    base += v;
  }
  return { col: c };
}

function bandLines(b) {
  const d = tl.data;
  return '<b>' + fmtBytes(b.size) + '</b> (requested ' + fmtBytes(b.requested) + ') · ' + esc(b.category) +
    (b.phase ? ' · ' + esc(b.phase) : '') + (b.step >= 0 ? ' · step ' + b.step : '') +
    '<br>' + esc(d.sites[b.site]);
}

let hoverId = null;
cv.addEventListener('mousemove', (ev) => {
  if (drag) return;
  const h = hit(ev);
  const d = tl.data;
  if (!h) { hideTip(); hoverId = null; return; }
  if (h.band) {
    const b = h.band;
    hoverId = b.id;
    showTip(ev, bandLines(b) + '<div class="muted">loading the stack…</div>');
    allocInfo(b.id).then((a) => {
      if (hoverId !== b.id) return;
      const kept = a.stack.filter((f) => !f.folded).slice(0, 10);
      showTip(ev, bandLines(b) + stackHTML(kept.length ? kept : a.stack.slice(0, 10), false) +
        '<div class="muted">click to pin: the full stack and its lifetime</div>');
      tip.dataset.id = String(b.id);
    }).catch((e) => showTip(ev, esc(e.message)));
    return;
  }
  hoverId = null;
  const c = h.col;
  let html = fmtX(d.x[c], d.axis) + ' · event ' + d.sample[c] + ' · allocated ' + fmtBytes(d.at[c]) +
    ' (column: ' + fmtBytes(d.min[c]) + ' – ' + fmtBytes(d.max[c]) + ')';
  if (h.rest) html = '<b>' + fmtBytes(h.rest.bytes[c]) + '</b> in smaller allocations of<br>' +
    esc(h.rest.site < 0 ? 'every other site' : d.sites[h.rest.site]) + '<br>' + html;
  showTip(ev, html);
});
cv.addEventListener('mouseleave', () => { hideTip(); hoverId = null; });

let drag = null;
cv.addEventListener('mousedown', (ev) => { drag = { x: ev.clientX, from: tl.from, to: tl.to, moved: false }; });
window.addEventListener('mousemove', (ev) => {
  if (!drag || !tl.geom) return;
  const dx = ev.clientX - drag.x;
  if (Math.abs(dx) > 3) drag.moved = true;
  if (!drag.moved) return;
  const per = (drag.to - drag.from + 1) / tl.geom.box.w;
  let from = drag.from - dx * per, to = drag.to - dx * per;
  if (from < 0) { to -= from; from = 0; }
  if (to > tl.span) { from -= to - tl.span; to = tl.span; }
  zoomTo(from, to);
});
window.addEventListener('mouseup', (ev) => {
  if (!drag) return;
  const moved = drag.moved;
  drag = null;
  if (!moved && ev.target === cv) pin(ev);
});
cv.addEventListener('wheel', (ev) => {
  ev.preventDefault();
  if (!tl.geom) return;
  const { box } = tl.geom;
  const r = cv.getBoundingClientRect();
  const f = Math.min(1, Math.max(0, (ev.clientX - r.left - box.l) / box.w));
  const k = ev.deltaY < 0 ? 0.6 : 1 / 0.6;
  const w = tl.to - tl.from + 1;
  const at = tl.from + f * w;
  let nw = Math.max(tl.axis === 'event' ? 8 : 2, Math.min(tl.span + 1, w * k));
  let from = at - f * nw, to = from + nw - 1;
  if (from < 0) { to -= from; from = 0; }
  if (to > tl.span) { from = Math.max(0, from - (to - tl.span)); to = tl.span; }
  zoomTo(from, to);
}, { passive: false });
$('reset').addEventListener('click', () => zoomTo(0, tl.span));
cv.addEventListener('dblclick', () => zoomTo(0, tl.span));

let zoomTimer = null;
function zoomTo(from, to) {
  tl.from = Math.round(from); tl.to = Math.round(to);
  clearTimeout(zoomTimer);
  zoomTimer = setTimeout(() => loadTimeline(tl.from, tl.to).catch(report), 40);
}
ms.zoom = (from, to) => loadTimeline(from, to);

async function pin(ev) {
  const h = hit(ev);
  const panel = $('pin');
  if (!h) return;
  const d = tl.data;
  if (!h.band) {
    const e = d.sample[h.col];
    panel.innerHTML = 'event ' + e + ' (' + fmtX(d.x[h.col], d.axis) + '): allocated ' + fmtBytes(d.at[h.col]) +
      ' · <a href="#moment?at=' + e + '">allocator state at event ' + e + '</a> · <a href="#sites?at=' + e + '">sites then</a>';
    return;
  }
  const a = await allocInfo(h.band.id);
  panel.dataset.id = String(a.id);
  const life = (a.start < 0 ? 'live before recording began' : 'allocated at event ' + a.start + ' (' + fmtX(a.x0, d.axis) + ')') +
    (a.end < 0 ? ', still live at the end' : ', freed at event ' + a.end + ' (' + fmtX(a.x1, d.axis) + ')' +
      (a.end_phase ? ' in ' + esc(a.end_phase) + (a.end_step >= 0 ? ' of step ' + a.end_step : '') : '')) +
    ' · ' + a.events + ' events' + (a.duration_us != null ? ' · ' + fmtX(a.duration_us, 'time_us') : '');
  panel.innerHTML = '<b>' + fmtBytes(a.size) + '</b> (requested ' + fmtBytes(a.requested) + ') at ' + esc(a.addr) +
    ' · ' + esc(a.category) + (a.phase ? ' · ' + esc(a.phase) : '') + (a.step >= 0 ? ' · step ' + a.step : '') +
    ' · stream ' + a.stream + '<br>site: ' + esc(a.site) + '<br>' + life +
    (a.start >= 0 ? ' · <a href="#moment?at=' + a.start + '">allocator state then</a>' : '') +
    '<h3>stack' + (a.free_stack ? ' (where it was freed: it predates the recording)' : '') +
    ' <label class="muted"><input type="checkbox" id="fold"> hide folded frames</label></h3>' + stackHTML(a.stack, false);
  $('fold').addEventListener('change', (e) => panel.querySelector('.stack').classList.toggle('hidefold', e.target.checked));
}

// ---- the moment: segments as bars

const segCv = $('segs');
let moment = null;
async function loadMoment(at) {
  $('m-at').value = at;
  const t0 = performance.now();
  const m = await api('moment', { at });
  ms.momentFetchMs = performance.now() - t0;
  moment = m;
  // The moment and its fragmentation as peak --json and frag --json write them.
  const f = m.frag, mo = m.moment, n = mo.numbers;
  $('m-head').innerHTML = '<h3>' + esc(mo.label) + (mo.event_index >= 0 ? ' (event ' + mo.event_index + ')' : '') + '</h3>' +
    '<table><tr><th>requested</th><th>allocated</th><th>active</th><th>reserved</th><th>free in segments</th><th>holes</th>' +
    '<th>largest free (small / large pool)</th><th>inactive split</th><th>segments</th></tr><tr>' +
    [n.requested, n.allocated, n.active, n.reserved, f.free].map((v) => '<td class="n">' + fmtBytes(v) + '</td>').join('') +
    '<td class="n">' + f.holes + '</td><td class="n">' + fmtBytes(f.largest_free_small_pool) + ' / ' + fmtBytes(f.largest_free_large_pool) +
    '</td><td class="n">' + fmtBytes(f.inactive_split) + '</td><td class="n">' + m.segments_total + '</td></tr></table>' +
    '<div class="' + (f.fragmented ? 'warn' : 'muted') + '">' + (100 * f.free_share).toFixed(1) + '% of reserved memory is free' +
    (f.fragmented ? ', split into holes too small to serve requests' : '') +
    (f.private_pools.length ? ' (outside the private pools)' : '') + '</div>' +
    (f.private_pools.length ? '<div class="muted" id="m-pools">private pools (CUDA graphs\', torch.cuda.MemPool\'s): ' +
      f.private_pools.map((p) => 'pool (' + p.pool.join(',') + ') ' + fmtBytes(p.reserved) + ' reserved in ' + p.segments +
        ' segment' + (p.segments === 1 ? '' : 's') + ', ' + fmtBytes(p.allocated) + ' allocated, ' + fmtBytes(p.free) + ' free').join('; ') +
      '; their free memory serves only their own graph\'s replays, and empty_cache() does not release it</div>' : '') +
    (m.segments.length < m.segments_total ? '<div class="muted">the ' + m.segments.length + ' largest segments drawn</div>' : '');
  drawSegments();
  // The categories that hold blocks, the largest first.
  const cats = Object.keys(mo.categories).filter((c) => mo.category_blocks[c] > 0).sort((a, b) => mo.categories[b] - mo.categories[a] || (a < b ? -1 : 1));
  $('m-tables').innerHTML = '<h3>categories</h3>' + table(['category', 'bytes', 'blocks'], cats.map((c) => ['<span style="display:inline-block;width:10px;height:10px;background:' +
    (catColor[c] || '#90a4ae') + '"></span> ' + esc(c), fmtBytes(mo.categories[c]), mo.category_blocks[c]])) +
    '<h3>streams and pools</h3>' + table(['stream', 'pool', 'bytes', 'blocks'], mo.streams.map((s) => [s.stream, s.pool.join(','), fmtBytes(s.bytes), s.blocks])) +
    '<h3>top sites</h3>' + table(['site', 'bytes', 'blocks', 'share'], mo.sites.map((s) => [esc(s.label), fmtBytes(s.bytes), s.blocks, (100 * s.share).toFixed(1) + '%']));
}
const catColor = { parameter: '#5c6bc0', 'optimizer state': '#8e24aa', gradient: '#ef6c00', activation: '#43a047', input: '#00897b',
  temporary: '#fdd835', 'before recording': '#795548', 'kv cache': '#d81b60', unknown: '#90a4ae' };
const SEG = { row: 16, left: 150, right: 10 };
// The segments are drawn on a canvas the height of the window at most,
// sticky inside a wrapper as tall as every row: only the rows in view are
// drawn, again as the page scrolls (a canvas of 300 rows, 4,800 px, cost
// most of the page's time to allocate and paint).
const segWrap = $('segs-wrap');
const segView = { top: 0, big: 1 };
function drawSegments() {
  const m = moment;
  if (!m) return;
  const t0 = performance.now();
  const W = segCv.clientWidth;
  const full = Math.max(30, m.segments.length * SEG.row + 10);
  segWrap.style.height = full + 'px';
  const H = Math.min(full, Math.max(200, window.innerHeight));
  const top = Math.max(0, Math.min(full - H, -segWrap.getBoundingClientRect().top));
  segView.top = top;
  if (segCv.width !== W || segCv.height !== H) { segCv.width = W; segCv.height = H; segCv.style.height = H + 'px'; }
  const g = segCv.getContext('2d');
  g.clearRect(0, 0, W, H);
  let big = 1;
  for (const s of m.segments) big = Math.max(big, s.size);
  segView.big = big;
  const w = W - SEG.left - SEG.right;
  g.font = '11px system-ui, sans-serif';
  const paths = new Map(), outline = new Path2D();
  const first = Math.max(0, Math.floor((top - 5) / SEG.row)), last = Math.min(m.segments.length, Math.ceil((top + H) / SEG.row));
  for (let i = first; i < last; i++) {
    const s = m.segments[i];
    const y = 5 + i * SEG.row - top, h = SEG.row - 4, sw = s.size / big * w;
    g.fillStyle = '#455a64';
    g.fillText(fmtBytes(s.size) + ' ' + s.pool + (s.stream ? ' s' + s.stream : ''), 4, y + 10);
    g.fillStyle = '#eceff1';
    g.fillRect(SEG.left, y, sw, h);
    if (s.blocks.length === 0 && s.n_blocks > 0) {
      g.fillStyle = '#90a4ae';
      g.fillRect(SEG.left, y, (s.allocated + s.pending_free) / big * w, h);
    }
    for (const b of s.blocks) { // one path per colour, filled once below
      const color = b.pending_free ? '#ff8a65' : (catColor[b.category] || '#90a4ae');
      let p = paths.get(color);
      if (!p) { p = new Path2D(); paths.set(color, p); }
      p.rect(SEG.left + b.offset / big * w, y, Math.max(0.5, b.size / big * w - 0.3), h);
    }
    outline.rect(SEG.left + 0.5, y + 0.5, sw, h);
  }
  for (const [color, p] of paths) { g.fillStyle = color; g.fill(p); }
  g.strokeStyle = '#78909c';
  g.stroke(outline);
  segCv.dataset.segments = String(m.segments.length);
  segCv.dataset.drawn = first + '-' + last;
  ms.segmentsMs = performance.now() - t0;
  segCv.dataset.event = String(m.moment.event_index);
}
ms.segViewTop = () => segView.top;
let segFrame = 0;
window.addEventListener('scroll', () => {
  if (document.body.dataset.page !== 'moment' || !moment || segFrame) return;
  segFrame = requestAnimationFrame(() => { segFrame = 0; drawSegments(); });
}, { passive: true });
function segHit(ev) {
  const m = moment;
  if (!m) return null;
  const r = segCv.getBoundingClientRect();
  const px = ev.clientX - r.left, py = ev.clientY - r.top + segView.top;
  const i = Math.floor((py - 5) / SEG.row);
  const s = m.segments[i];
  if (!s) return null;
  const off = (px - SEG.left) / (segCv.clientWidth - SEG.left - SEG.right) * segView.big;
  if (off < 0 || off > s.size) return null;
  for (const b of s.blocks) if (off >= b.offset && off < b.offset + b.size) return { seg: s, block: b };
  for (const h of s.holes) if (off >= h.offset && off < h.offset + h.size) return { seg: s, hole: h };
  return { seg: s };
}
segCv.addEventListener('mousemove', (ev) => {
  const h = segHit(ev);
  if (!h) { hideTip(); return; }
  const s = h.seg;
  let html = 'segment ' + esc(s.addr) + ' · ' + fmtBytes(s.size) + ' · ' + s.pool + ' pool' + (s.expandable ? ' (expandable)' : '') +
    ' · stream ' + s.stream + '<br>allocated ' + fmtBytes(s.allocated) + ', free ' + fmtBytes(s.free) + ' (largest hole ' + fmtBytes(s.largest_hole) + ')';
  if (h.block) html = '<b>' + fmtBytes(h.block.size) + '</b> (requested ' + fmtBytes(h.block.requested) + ') · ' + esc(h.block.category) +
    (h.block.pending_free ? ' · freed, pending' : '') + '<br>' + esc(moment.sites[h.block.site]) + '<br>' + html;
  if (h.hole) html = '<b>free hole ' + fmtBytes(h.hole.size) + '</b><br>' + html;
  showTip(ev, html);
});
segCv.addEventListener('mouseleave', hideTip);
segCv.addEventListener('click', async (ev) => {
  const h = segHit(ev);
  if (!h || !h.block || h.block.id == null) return;
  const a = await allocInfo(h.block.id);
  $('m-tables').insertAdjacentHTML('afterbegin', '<div class="panel"><b>' + fmtBytes(a.size) + '</b> · ' + esc(a.category) + ' · ' + esc(a.site) +
    (a.start >= 0 ? ' · allocated at event ' + a.start : ' · live before recording') + (a.end >= 0 ? ', freed at event ' + a.end : ', live to the end') +
    stackHTML(a.stack, false) + '</div>');
});
$('m-sim').addEventListener('click', async () => {
  $('m-sim-out').textContent = 'simulating…';
  try {
    const r = await api('settings');
    let html = 'recorded reserved peak ' + fmtBytes(r.recorded_peak_reserved) + '. ';
    // A late start's peak comes with its bound, as frag --simulate prints it.
    const peakOf = (x) => fmtBytes(x.peak_reserved) + (x.peak_reserved_high > 0 ? ' (' + fmtBytes(x.peak_reserved_low) + ' to ' + fmtBytes(x.peak_reserved_high) + ')' : '');
    html += r.lower.length ? table(['setting', 'reserved peak', ''], r.lower.map((x) => [esc(x.conf), peakOf(x), x.oom ? 'runs out of memory' : ''])) :
      r.why ? esc(r.why) : 'No setting tried lowers it by 1% or more.';
    if (r.at_oom.length) html += '<h3>at the OOM</h3>' + table(['setting', 'served the failed request', 'reserved peak'],
      r.at_oom.map((x) => [esc(x.conf), x.served ? 'yes' : 'no: fails at event ' + x.fails_at, fmtBytes(x.peak_reserved)]));
    $('m-sim-out').innerHTML = html;
  } catch (e) { $('m-sim-out').textContent = e.message; }
});
$('m-go').addEventListener('click', () => { location.hash = '#moment?at=' + encodeURIComponent($('m-at').value); });

function table(head, rows) {
  return '<table><tr>' + head.map((h) => '<th>' + h + '</th>').join('') + '</tr>' +
    rows.map((r) => '<tr>' + r.map((c) => '<td>' + c + '</td>').join('') + '</tr>').join('') + '</table>';
}

// ---- sites, steps, leaks, OOM

let sitesTimer = null;
async function loadSites(at, q) {
  const s = await api('sites', { at, q });
  const rows = s.sites.map((r, i) => '<tr class="click" data-i="' + i + '"><td>' + esc(r.label) + '</td><td class="n">' + fmtBytes(r.bytes) +
    '</td><td class="n">' + r.blocks + '</td><td class="n">' + (100 * r.share).toFixed(1) + '%</td></tr>' +
    '<tr hidden><td colspan="4">' + stackHTML(r.stack, false) + '</td></tr>').join('');
  $('s-body').innerHTML = '<h3>' + esc(s.label) + ': ' + s.match + ' of ' + s.total + ' sites' + (q ? ' match “' + esc(q) + '”' : '') + '</h3>' +
    '<table id="s-table"><tr><th>site</th><th>bytes</th><th>blocks</th><th>share</th></tr>' + rows + '</table>' +
    (q ? '' : (ms.ops && ms.ops.length ? '<h3>at the peak, by operator (the joined profiler trace)</h3>' +
      table(['operator', 'bytes'], ms.ops.map((o) => [esc(o.op), fmtBytes(o.bytes)])) : '') +
      '<h3>call tree (frames that count)</h3>' + treeHTML(s.tree, 0));
  for (const tr of $('s-body').querySelectorAll('tr.click')) tr.addEventListener('click', () => { tr.nextSibling.hidden = !tr.nextSibling.hidden; });
}
function treeHTML(n, depth) {
  const label = esc(n.name) + ' <span class="muted">' + fmtBytes(n.bytes) + ' · ' + n.count + '</span>';
  if (!n.children.length) return '<div style="margin-left:14px" title="' + esc(n.path) + '">' + label + '</div>';
  return '<details' + (depth < 2 ? ' open' : '') + '><summary title="' + esc(n.path) + '">' + label + '</summary>' +
    n.children.map((c) => treeHTML(c, depth + 1)).join('') + '</details>';
}
$('s-q').addEventListener('input', () => { clearTimeout(sitesTimer); sitesTimer = setTimeout(() => loadSites($('s-at').value, $('s-q').value).catch(report), 150); });
$('s-at').addEventListener('change', () => loadSites($('s-at').value, $('s-q').value).catch(report));

// The steps come a page at a time (a long run has thousands): the page's
// offset is in the address (#steps?offset=N), so back and forward work.
const STEPS_PAGE = 100;
async function loadSteps(q) {
  const params = { limit: STEPS_PAGE, offset: Number(q.get('offset')) || 0 };
  if (q.get('step') !== null) params.step = q.get('step');
  const s = await api('steps', params);
  const rows = [];
  for (const st of s.steps) for (const p of st.phases) {
    rows.push(['<a href="#moment?at=' + p.peak_event + '">' + st.step + '</a>', esc(p.name), fmtBytes(p.start), fmtBytes(p.peak), fmtBytes(p.end),
      p.first + '–' + p.last, fmtX(p.x0, tl.axis) + ' – ' + fmtX(p.x1, tl.axis)]);
  }
  const link = (off, label) => off < 0 || off >= s.total || off === s.offset ? '<span class="muted">' + label + '</span>' :
    '<a href="#steps?offset=' + off + '">' + label + '</a>';
  const lastPage = Math.max(0, Math.floor((s.total - 1) / s.limit) * s.limit);
  const nav = s.total <= s.limit ? '' : '<div class="bar" id="st-nav">' + link(0, '« first') + link(s.offset - s.limit, '‹ previous') +
    '<span>steps ' + (s.offset + 1) + '–' + (s.offset + s.steps.length) + ' of ' + s.total + '</span>' +
    link(s.offset + s.limit, 'next ›') + link(lastPage, 'last »') +
    (s.peak_offset >= 0 ? link(Math.floor(s.peak_offset / s.limit) * s.limit, 'the page of the peak') : '') +
    '<label>go to step <input id="st-go" size="6"></label></div>';
  $('st-body').innerHTML = '<h3>' + s.total + ' steps (boundaries from ' + esc(s.from) + ')</h3>' + nav +
    (s.steps.length ? table(['step', 'phase', 'allocated on entry', 'peak', 'on exit', 'events', 'range'], rows) : '<div class="muted">no steps were found</div>');
  $('st-body').dataset.offset = String(s.offset);
  $('st-body').dataset.rows = String(s.steps.length);
  const go = $('st-go');
  if (go) go.addEventListener('change', () => { location.hash = '#steps?step=' + encodeURIComponent(go.value.trim()); });
}
async function loadLeaks() {
  const l = await api('leaks');
  let html = '<h3>' + (l.found ? '<span class="warn">leak: the floor grows ' + fmtBytes(l.growth_per_step) + ' per step</span>' :
    !l.reason ? 'no leak: the floor after each steady step does not grow' : 'no verdict: ' + esc(l.reason)) + '</h3>';
  // Every steady step's floor in a chart (a long run has thousands); the
  // table lists the first and last LEAK_ROWS of them.
  const n = l.floors.length, rows = [];
  let top = 1, low = Infinity;
  for (const f of l.floors) { top = Math.max(top, f); low = Math.min(low, f); }
  for (let i = 0; i < n; i++) {
    if (n > 2 * LEAK_ROWS && i === LEAK_ROWS) {
      rows.push(['…', '<span class="muted">' + (n - 2 * LEAK_ROWS) + ' more steps, in the chart</span>', '']);
      i = n - LEAK_ROWS - 1;
      continue;
    }
    rows.push([l.steps[i], fmtBytes(l.floors[i]), '<div style="background:#90a4ae;height:8px;width:' + (300 * l.floors[i] / top).toFixed(0) + 'px"></div>']);
  }
  if (n) html += '<div class="muted">allocated after each steady step: ' + fmtBytes(low) + ' to ' + fmtBytes(top) + ' over ' + n + ' steps</div>' +
    '<div class="plot"><canvas id="lk-floors" height="90"></canvas></div>';
  html += table(['step', 'floor after it', ''], rows);
  html += '<h3>sites of blocks born in a steady step and still live at the end</h3>' + (l.sites.length === 0 ? '<div class="muted">none</div>' :
    table(['site', 'bytes', 'steps', 'per step', 'stack'], l.sites.map((s) => [esc(s.label), fmtBytes(s.bytes), s.steps, fmtBytes(s.bytes_per_step), stackHTML(s.stack, true)])));
  $('lk-body').innerHTML = html;
  const cv = $('lk-floors');
  if (!cv) return;
  const W = cv.clientWidth, H = cv.height, L = 70, w = W - L - 10, g = cv.getContext('2d');
  cv.width = W;
  g.font = '11px system-ui, sans-serif';
  const yOf = (b) => H - 4 - (b - low) / Math.max(1, top - low) * (H - 12);
  g.fillStyle = '#90a4ae';
  for (let i = 0; i < n; i++) { // one column of pixels may hold many steps: drawn as their range
    const x = L + i / n * w;
    g.fillRect(x, yOf(l.floors[i]) - 1, Math.max(1, w / n), 2);
  }
  g.fillStyle = '#455a64'; g.textAlign = 'right';
  g.fillText(fmtBytes(top), L - 4, 12); g.fillText(fmtBytes(low), L - 4, H - 4);
  cv.dataset.steps = String(n);
  $('lk-body').dataset.rows = String(rows.length);
}
const LEAK_ROWS = 20;
async function loadOOM() {
  const o = await api('oom');
  if (!o.length) { $('oom-body').innerHTML = '<h3>no out-of-memory event was recorded</h3>'; return; }
  // Each OOM's post-mortem, as oom --json writes it.
  $('oom-body').innerHTML = o.map((e) => {
    const f = e.fragmentation, largest = e.pool === 'small' ? f.largest_free_small_pool : f.largest_free_large_pool;
    return '<h3 class="warn">OOM ' + e.n + ' at event ' + e.event_index + ': ' + fmtBytes(e.request) + ' requested, ' + (e.capacity ? 'capacity' : 'fragmentation') + '</h3>' +
      '<div>' + esc(e.verdict) + '</div>' +
      table(['allocated', 'reserved', 'device free', 'segment needed', 'largest free (' + e.pool + ' pool)', 'stranded', 'headroom', 'step', 'phase'],
        [[fmtBytes(e.numbers.allocated), fmtBytes(e.numbers.reserved), fmtBytes(e.device_free), fmtBytes(e.alloc_size), fmtBytes(largest),
          fmtBytes(f.stranded_for_request || 0), fmtBytes(f.headroom_for_request || 0), e.step == null ? '' : e.step, esc(e.phase)]]) +
      '<div>requested at ' + esc(e.request_site.label) + ' · <a href="#moment?at=oom' + e.n + '">allocator state then</a></div>' + stackHTML(e.request_stack, true) +
      '<h3>live then, by site</h3>' + table(['site', 'bytes', 'blocks'], e.live.sites.map((s) => [esc(s.label), fmtBytes(s.bytes), s.blocks]));
  }).join('');
}

// ---- two runs compared

async function loadCompare() {
  const c = await api('compare', { a: $('c-a').value, b: $('c-b').value });
  const cv = $('cmp'), W = cv.clientWidth, H = cv.height;
  cv.width = W;
  const g = cv.getContext('2d');
  g.clearRect(0, 0, W, H);
  const L = 70, T = 10, w = W - L - 10, h = H - T - 30, n = Math.max(1, c.aligned.length);
  let top = 1;
  for (const s of c.aligned) for (const p of [s.a, s.b]) if (p) top = Math.max(top, p.peak, p.start, p.end);
  top *= 1.05;
  const y = (b) => T + h - b / top * h;
  g.font = '11px system-ui, sans-serif';
  c.aligned.forEach((s, i) => {
    const x0 = L + i / n * w, x1 = L + (i + 1) / n * w;
    g.fillStyle = phaseColor[s.phase] || 'rgba(120,144,156,.08)';
    g.fillRect(x0, T, x1 - x0, h);
    if (x1 - x0 > 40) { g.fillStyle = '#607d8b'; g.fillText((s.step >= 0 ? s.step + ' ' : '') + s.phase, x0 + 2, T + h + 14, x1 - x0 - 4); }
  });
  for (const [k, color] of [['a', '#1565c0'], ['b', '#c62828']]) {
    g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
    let started = false;
    c.aligned.forEach((s, i) => {
      const p = s[k];
      if (!p) { started = false; return; }
      const x0 = L + i / n * w, x1 = L + (i + 1) / n * w;
      for (const [x, v] of [[x0, p.start], [(x0 + x1) / 2, p.peak], [x1, p.end]]) {
        if (!started) { g.moveTo(x, y(v)); started = true; } else g.lineTo(x, y(v));
      }
    });
    g.stroke();
  }
  g.fillStyle = '#455a64'; g.textAlign = 'right';
  for (let v = 0, st = niceBytes(top / 5); v <= top; v += st) g.fillText(fmtBytes(v), L - 4, y(v) + 4);
  g.textAlign = 'left';
  g.fillStyle = '#1565c0'; g.fillText('A ' + c.source_a, L + 6, T + 24);
  g.fillStyle = '#c62828'; g.fillText('B ' + c.source_b, L + 6, T + 38);
  cv.dataset.slots = String(c.aligned.length);
  // A site row is the frame that allocated; the user's lines that called it, A's and B's, below.
  const callers = (r) => {
    const side = (c, n) => esc(c) + (n > 1 ? ' and ' + (n - 1) + ' more' : '');
    if (!r.caller_a && !r.caller_b) return '';
    if (r.caller_a === r.caller_b && r.callers_a === r.callers_b) return '<br><span class="muted">called from ' + side(r.caller_a, r.callers_a) + '</span>';
    const parts = [];
    if (r.caller_a) parts.push(side(r.caller_a, r.callers_a) + ' (A)');
    if (r.caller_b) parts.push(side(r.caller_b, r.callers_b) + ' (B)');
    return '<br><span class="muted">called from ' + parts.join(', ') + '</span>';
  };
  const d = (rows) => table(['', 'A', 'B', 'B − A'], rows.map((r) => [esc(r.name) + callers(r), fmtBytes(r.a), fmtBytes(r.b), fmtBytes(r.change)]));
  const x = c.diff; // the device pair's diff, as diff --json writes it
  $('c-body').innerHTML = table(['', 'A', 'B'], [['allocated at the peak', fmtBytes(x.peak_a.allocated), fmtBytes(x.peak_b.allocated)],
    ['reserved peak', fmtBytes(x.reserved_peak_a), fmtBytes(x.reserved_peak_b)], ['allocated at the end', fmtBytes(x.end_a.allocated), fmtBytes(x.end_b.allocated)]]) +
    (c.truncated ? '<div class="muted">the first slots only</div>' : '') +
    '<h3>at the peak, by site</h3>' + d(x.sites) + '<h3>by category</h3>' + d(x.categories) + '<h3>each phase\'s highest peak</h3>' + d(x.phases);
}
$('c-a').addEventListener('change', () => loadCompare().catch(report));
$('c-b').addEventListener('change', () => loadCompare().catch(report));

// ---- pages and errors

function report(e) {
  ms.errors.push(String(e && e.message || e));
  $('tl-status').textContent = 'error: ' + (e && e.message || e);
}
async function route() {
  const [page, query] = (location.hash.slice(1) || 'timeline').split('?');
  const q = new URLSearchParams(query || '');
  for (const s of document.querySelectorAll('.page')) s.classList.toggle('on', s.id === 'page-' + page);
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('on', a.dataset.page === page);
  hideTip();
  try {
    if (page === 'timeline') { if (!tl.data) await loadTimeline(); else drawTimeline(); }
    if (page === 'moment') await loadMoment(q.get('at') || $('m-at').value || 'peak');
    if (page === 'sites') { if (q.get('at')) $('s-at').value = q.get('at'); await loadSites($('s-at').value, $('s-q').value); }
    if (page === 'steps') await loadSteps(q);
    if (page === 'leaks') await loadLeaks();
    if (page === 'oom') await loadOOM();
    if (page === 'compare') await loadCompare();
    document.body.dataset.page = page;
  } catch (e) { report(e); }
}
async function loadView() {
  tl.data = null; tl.whole = null; allocCache.clear();
  // The device's summary document, as summary --json writes it, and
  // where its moments sit on this page's axis.
  const s = await api('summary'), d = s.summary;
  tl.axis = s.view.axis;
  ms.ops = d.ops_at_peak || [];
  ms.summary = s;
  const problems = d.findings.filter((f) => f.problem).map((f) => f.kind);
  $('numbers').textContent = 'peak: ' + fmtBytes(d.at_peak.allocated) + ' allocated · ' + fmtBytes(d.at_peak.requested) + ' requested · ' +
    fmtBytes(d.peaks.reserved.bytes) + ' reserved (its own peak)' + (d.peak_phase ? ' · in ' + d.peak_phase + (d.peak_step != null ? ' of step ' + d.peak_step : '') : '') +
    (problems.length ? ' · findings: ' + problems.join(', ') : '');
  // What the command line says beside the numbers, and the warnings.
  const warnings = s.warnings.concat(d.warnings);
  $('notes').innerHTML = s.notes.map((n) => '<div class="note">' + esc(n) + '</div>').join('') +
    warnings.map((w) => '<div class="warn">' + esc(w) + '</div>').join('');
  $('notes').hidden = !s.notes.length && !warnings.length;
  await route();
}
window.addEventListener('hashchange', route);
window.addEventListener('resize', () => { if (tl.data) loadTimeline(tl.from, tl.to).catch(report); drawSegments(); });
$('view').addEventListener('change', (e) => { ms.view = Number(e.target.value); loadView().catch(report); });
(async () => {
  try {
    const v = await api('views');
    const opts = v.views.map((x) => '<option value="' + x.id + '">' + esc(x.source) + ' · device ' + x.device + ' · ' + x.events + ' events</option>').join('');
    $('view').innerHTML = opts;
    if (v.views.length > 1) {
      $('c-a').innerHTML = opts; $('c-b').innerHTML = opts;
      $('c-b').value = '1';
      $('nav-compare').hidden = false;
    }
    await loadView();
    ms.ready = true;
  } catch (e) { report(e); }
})();
