/* trainrepro report: a small SVG charting module, no libraries.
 *
 * Charts.line({title, width, height, x: {label, integer}, y: {label, unit, log, min, max},
 *              series: [{name, x: [...], y: [...], color, dash, width, points, legend}],
 *              refLines: [{y, label, color}], markers: [{x, label, color}],
 *              ranges: [{from, to, label}], segments: [{x1, y1, x2, y2, label, color}]})
 * Charts.bars({title, width, height, y: {label, unit}, groups: [...], series: [{name, values, color}]})
 * Both return an <svg class="chart">. Units: "bytes" (B/KiB/MiB/GiB), "percent", or none.
 * null / non-finite values are gaps; on a log axis values <= 0 sit on the bottom edge.
 */
var Charts = (function () {
  'use strict';
  var NS = 'http://www.w3.org/2000/svg';
  var PALETTE = ['#0072b2', '#d55e00', '#009e73', '#cc79a7', '#e69f00', '#56b4e9', '#7f3c8d', '#8c6d31'];
  var SUP = {'-': '\u207b', 0: '\u2070', 1: '\u00b9', 2: '\u00b2', 3: '\u00b3', 4: '\u2074',
             5: '\u2075', 6: '\u2076', 7: '\u2077', 8: '\u2078', 9: '\u2079'};
  var clipCount = 0;

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) {  // a non-finite number (absurd input) leaves the attribute out
      var v = attrs[k];
      if (v !== undefined && v !== null && !(typeof v === 'number' && !isFinite(v))) e.setAttribute(k, v);
    }
    if (parent) parent.appendChild(e);
    return e;
  }
  function txt(parent, x, y, s, attrs) {
    var t = el('text', attrs || {}, parent);
    if (isFinite(x)) t.setAttribute('x', x);
    if (isFinite(y)) t.setAttribute('y', y);
    t.textContent = s;
    return t;
  }
  function tip(parent, s) { el('title', {}, parent).textContent = s; }
  function finite(v) { return typeof v === 'number' && isFinite(v); }

  function trim(s) { return s.indexOf('.') < 0 || s.indexOf('e') >= 0 ? s : s.replace(/\.?0+$/, ''); }
  function fmtNumber(v, digits) {
    if (!finite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a === 0) return '0';
    if (a >= 1e6 || a < 1e-3) return v.toExponential(Math.max(0, (digits || 3) - 1)).replace('e+', 'e');
    return trim(v.toPrecision(digits || 3));
  }
  var BYTE_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  function byteBase(a) {
    var k = 0;
    while (k < BYTE_UNITS.length - 1 && a >= 1024 * Math.pow(1024, k)) k++;
    return k;
  }
  function fmtBytes(v, digits, k) {
    if (!finite(v)) return 'n/a';
    if (k === undefined) k = byteBase(Math.abs(v));
    var u = v / Math.pow(1024, k);
    return (k === 0 ? (Math.abs(u) >= 100 ? String(Math.round(u)) : trim(u.toPrecision(digits || 3))) : trim(u.toFixed(Math.max(0, (digits || 3) - String(Math.floor(Math.abs(u))).length)))) + ' ' + BYTE_UNITS[k];
  }
  function superscript(n) { return String(n).split('').map(function (c) { return SUP[c] || c; }).join(''); }
  function fmtPercent(v) {
    if (!finite(v)) return 'n/a';
    var a = Math.abs(v);
    if (a === 0) return '0 %';
    if (a >= 1e5 || a < 1e-2) {
      var e = Math.floor(Math.log10(a)), m = v / Math.pow(10, e);
      if (Math.abs(m - 1) < 1e-9) return '10' + superscript(e) + ' %';
      return trim(m.toFixed(1)) + '\u00d710' + superscript(e) + ' %';
    }
    return (a >= 100 ? Math.round(v).toLocaleString('en-US') : trim(v.toPrecision(3))) + ' %';
  }
  function format(v, unit, k) {
    if (unit === 'bytes') return fmtBytes(v, 3, k);
    if (unit === 'percent') return fmtPercent(v);
    return fmtNumber(v);
  }
  // A linear axis' tick label: as many decimals as the tick step needs, in the axis' unit.
  function tickLabel(v, unit, scale, step, k) {
    var u = step / scale, dec = 0;  // the decimals that write the step exactly (0.25 needs 2)
    while (dec < 8 && Math.abs(Math.round(u * Math.pow(10, dec)) - u * Math.pow(10, dec)) > 1e-6 * u * Math.pow(10, dec)) dec++;
    if (v === 0) return '0';
    if (unit === 'bytes') return (k ? (v / scale).toFixed(dec) : String(Math.round(v))) + ' ' + BYTE_UNITS[k];
    var a = Math.abs(v);
    if (a >= 1e6 || (a !== 0 && a < 1e-4)) return fmtNumber(v);
    return (unit === 'percent' ? (v.toFixed(dec) + ' %') : v.toFixed(dec));
  }

  function niceStep(range, count) {
    var raw = range / Math.max(1, count), p = Math.pow(10, Math.floor(Math.log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
  }
  function linearTicks(lo, hi, count, unitScale, integer) {
    var s = unitScale || 1, step = niceStep((hi - lo) / s, count) * s;
    if (integer) step = Math.max(1, Math.round(step));
    var out = [], v = Math.ceil(lo / step - 1e-9) * step;
    for (; v <= hi + step * 1e-9 && out.length < 50; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    return out;
  }
  function logTicks(lo, hi) {
    var a = Math.floor(Math.log10(lo) + 1e-9), b = Math.ceil(Math.log10(hi) - 1e-9), by = Math.max(1, Math.ceil((b - a) / 7));
    var out = [];
    for (var e = a; e <= b; e += by) out.push(Math.pow(10, e));
    return out;
  }

  // y domain and scale: returns {lo, hi, map(v), ticks, k}
  function yScale(opt, values, top, bottom) {
    var unit = opt.unit, vs = values.filter(finite), lo, hi, ticks;
    if (opt.log) {
      var pos = vs.filter(function (v) { return v > 0; });
      lo = pos.length ? Math.min.apply(null, pos) : 1; hi = pos.length ? Math.max.apply(null, pos) : 100;
      lo = Math.pow(10, Math.floor(Math.log10(lo))); hi = Math.pow(10, Math.ceil(Math.log10(hi)));
      if (hi <= lo) hi = lo * 10;
      ticks = logTicks(lo, hi);
      // zeros (exact agreement) get their own row under the lowest decade
      var la = Math.log10(lo), lb = Math.log10(hi), zero = vs.some(function (v) { return v <= 0; }), b0 = zero ? bottom - 16 : bottom;
      if (zero) ticks = [0].concat(ticks);
      return {lo: lo, hi: hi, ticks: ticks, label: function (v) { return format(v, unit); }, map: function (v) {
        if (!(v > 0)) return bottom;
        return b0 - (Math.log10(v) - la) / (lb - la) * (b0 - top);
      }};
    }
    lo = vs.length ? Math.min.apply(null, vs) : 0; hi = vs.length ? Math.max.apply(null, vs) : 1;
    if (finite(opt.min)) lo = Math.min(lo, opt.min);
    if (finite(opt.max)) hi = Math.max(hi, opt.max);
    if (hi === lo) { var d = Math.abs(hi) * 0.05 || 1; lo -= d; hi += d; if (opt.min === 0 && lo < 0) lo = 0; }
    else { var pad = (hi - lo) * 0.06; if (!isFinite(lo - pad) || !isFinite(hi + pad)) pad = 0;
      if (!(opt.min === 0 && lo >= 0 && lo - pad < 0)) lo -= pad; else lo = 0; hi += pad; }
    var k = unit === 'bytes' ? byteBase(Math.max(Math.abs(lo), Math.abs(hi))) : 0;
    var scale = unit === 'bytes' ? Math.pow(1024, k) : 1;
    ticks = linearTicks(lo, hi, 5, scale, false);
    var step = ticks.length > 1 ? ticks[1] - ticks[0] : scale, label = function (v) { return tickLabel(v, unit, scale, step, k); };
    if (unit === 'bytes' && k > 0 && (hi - lo) / Math.max(Math.abs(lo), Math.abs(hi)) < 0.002) {
      // a small change on a large value (a heap of 80 MiB moving by a few KiB): the first tick
      // in full, the others as offsets from it, in the unit of the change
      var kd = byteBase(hi - lo), sd = Math.pow(1024, kd);
      ticks = linearTicks(lo, hi, 5, sd, false);
      var base = ticks[0], dstep = ticks.length > 1 ? ticks[1] - ticks[0] : sd;
      label = function (v) { return v === base ? fmtBytes(base, 6) : '+' + tickLabel(v - base, 'bytes', sd, dstep, kd); };
    }
    return {lo: lo, hi: hi, ticks: ticks, k: k, label: label, map: function (v) {
      return bottom - (v - lo) / (hi - lo) * (bottom - top);
    }};
  }

  // Room for the widest tick label and the rotated axis label.
  function leftMargin(scale) {
    var w = 0;
    scale.ticks.forEach(function (v) { w = Math.max(w, scale.label(v).length); });
    return Math.max(56, Math.round(w * 6.7) + 34);
  }
  function frame(o, cls) {
    var W = o.width || 620, H = o.height || 280;
    var svg = el('svg', {'class': 'chart ' + (cls || ''), width: W, height: H, viewBox: '0 0 ' + W + ' ' + H,
                         role: 'img', 'aria-label': o.title || 'chart'});
    tip(svg, o.title || 'chart');
    if (o.title) txt(svg, 8, 18, o.title, {'class': 'chart-title'});
    return {svg: svg, W: W, H: H};
  }

  // Legend items laid out in rows (under the plot), each item at an x offset in its row.
  function legendLayout(items, width) {
    var rows = [[]], x = 0;
    items.forEach(function (it) {
      var w = 26 + Math.min(it.name.length, 48) * 6.4 + 14;
      if (x + w > width && rows[rows.length - 1].length) { rows.push([]); x = 0; }
      rows[rows.length - 1].push({it: it, x: x}); x += w;
    });
    return rows;
  }
  function drawLegend(g, rows, x0, y0) {
    rows.forEach(function (row, r) {
      row.forEach(function (c) {
        var it = c.it, y = y0 + r * 17, gi = el('g', {'class': 'legend-item'}, g);
        if (it.kind === 'range') el('rect', {x: x0 + c.x, y: y - 6, width: 20, height: 12, 'class': 'range'}, gi);
        else el('line', {x1: x0 + c.x, x2: x0 + c.x + 20, y1: y, y2: y, stroke: it.color, 'stroke-width': it.width || 2,
                         'stroke-dasharray': it.dash}, gi);
        var name = it.name.length > 48 ? it.name.slice(0, 47) + '\u2026' : it.name;
        txt(gi, x0 + c.x + 26, y + 4, name, {'class': 'legend'});
        if (name !== it.name) tip(gi, it.name);
      });
    });
  }

  function line(o) {
    var f = frame(o, 'line'), svg = f.svg, W = f.W, xo = o.x || {}, yo = o.y || {};
    var series = (o.series || []).filter(Boolean), refs = o.refLines || [], marks = o.markers || [];
    var ranges = o.ranges || [], segs = o.segments || [];
    series.forEach(function (s, i) { if (!s.color) s.color = PALETTE[i % PALETTE.length]; });
    var legendItems = series.filter(function (s) { return s.legend !== false; }).map(function (s) {
      return {name: s.name || '', color: s.color, dash: s.dash, width: s.width};
    });
    refs.concat(segs).forEach(function (r) { if (r.legend) legendItems.push({name: r.legend, color: r.color || '#444', dash: r.dash || '6 4'}); });
    ranges.forEach(function (r) { if (r.legend) legendItems.push({name: r.legend, kind: 'range'}); });
    var R = 18, T = o.title ? 30 : 12;
    var rows = legendLayout(legendItems, W - 110), legendH = legendItems.length ? rows.length * 17 + 6 : 0;
    var B = f.H - 40 - legendH;
    if (B - T < 80) { B = T + 140; f.H = B + 40 + legendH; svg.setAttribute('height', f.H); svg.setAttribute('viewBox', '0 0 ' + W + ' ' + f.H); }

    var xs = [], ys = [];
    series.forEach(function (s) {  // the x range covers steps whose value is missing too
      (s.x || []).forEach(function (v, i) { if (finite(v)) { xs.push(v); if (finite((s.y || [])[i])) ys.push(s.y[i]); } });
    });
    refs.forEach(function (r) { if (finite(r.y)) ys.push(r.y); });
    segs.forEach(function (s) { xs.push(s.x1, s.x2); ys.push(s.y1, s.y2); });
    marks.forEach(function (m) { xs.push(m.x); });
    ranges.forEach(function (r) { xs.push(r.from, r.to); });
    xs = xs.filter(finite);
    var hasData = ys.length > 0;
    var xlo = xs.length ? Math.min.apply(null, xs) : 0, xhi = xs.length ? Math.max.apply(null, xs) : 1;
    if (xhi === xlo) { xlo -= 1; xhi += 1; }
    var xpad = (xhi - xlo) * 0.02;
    if (isFinite(xlo - xpad) && isFinite(xhi + xpad)) { xlo -= xpad; xhi += xpad; }
    var ys_ = yScale(yo, ys, T, B), Y = ys_.map;
    var L = leftMargin(ys_);
    var X = function (v) { return L + (v - xlo) / (xhi - xlo) * (W - L - R); };

    // axes, grid, ticks
    var grid = el('g', {'class': 'grid'}, svg);
    ys_.ticks.forEach(function (v) {
      var y = Y(v);
      el('line', {x1: L, x2: W - R, y1: y, y2: y}, grid);
      txt(svg, L - 6, y + 4, ys_.label(v), {'class': 'tick', 'text-anchor': 'end'});
    });
    linearTicks(xlo, xhi, Math.max(2, Math.floor((W - L - R) / 70)), 1, xo.integer !== false).forEach(function (v) {
      var x = X(v);
      el('line', {x1: x, x2: x, y1: B, y2: B + 4, 'class': 'axis'}, svg);
      txt(svg, x, B + 17, fmtNumber(v, 6), {'class': 'tick', 'text-anchor': 'middle'});
    });
    el('line', {x1: L, x2: W - R, y1: B, y2: B, 'class': 'axis'}, svg);
    el('line', {x1: L, x2: L, y1: T, y2: B, 'class': 'axis'}, svg);
    if (xo.label) txt(svg, L + (W - L - R) / 2, B + 33, xo.label, {'class': 'axis-label', 'text-anchor': 'middle'});
    if (yo.label) { var yl = txt(svg, 0, 0, yo.label, {'class': 'axis-label', 'text-anchor': 'middle'});
      yl.setAttribute('transform', 'translate(13,' + ((T + B) / 2) + ') rotate(-90)'); }

    var id = 'clip' + (++clipCount);
    el('rect', {x: L, y: T - 2, width: W - L - R, height: B - T + 4}, el('clipPath', {id: id}, svg));
    var plot = el('g', {'clip-path': 'url(#' + id + ')'}, svg);
    ranges.forEach(function (r) {
      var a = X(Math.max(r.from, xlo)), b = X(Math.min(r.to, xhi));
      if (!(b > a)) return;
      var rc = el('rect', {x: a, y: T, width: b - a, height: B - T, 'class': 'range'}, plot);
      if (r.label) { tip(rc, r.label); txt(plot, a + 4, T + 13, r.label, {'class': 'range-label'}); }
    });
    refs.forEach(function (r) {
      if (!finite(r.y)) return;
      var y = Y(r.y), g = el('g', {'class': 'ref'}, plot);
      el('line', {x1: L, x2: W - R, y1: y, y2: y, stroke: r.color || '#c62828', 'stroke-dasharray': '6 4'}, g);
      if (r.label && y >= T - 1 && y <= B + 1) txt(svg, W - R - 4, y - T < 16 ? y + 15 : y - 5, r.label,
                                                {'class': 'ref-label', 'text-anchor': 'end', fill: r.color || '#c62828'});
    });
    marks.forEach(function (m) {
      if (!finite(m.x)) return;
      var x = X(m.x), g = el('g', {'class': 'marker'}, plot);
      el('line', {x1: x, x2: x, y1: T, y2: B, stroke: m.color || '#c62828'}, g);
      if (m.label) {
        var right = x > L + (W - L - R) * 0.6;
        txt(g, right ? x - 5 : x + 5, T + 13, m.label, {'class': 'marker-label', 'text-anchor': right ? 'end' : 'start', fill: m.color || '#c62828'});
      }
    });
    series.forEach(function (s) {
      var d = '', pen = false, sx = s.x || [], sy = s.y || [], pts = [];
      for (var i = 0; i < sx.length; i++) {
        var ok = finite(sx[i]) && finite(sy[i]);
        if (!ok) { pen = false; continue; }
        var px = X(sx[i]), py = Y(sy[i]);
        d += (pen ? 'L' : 'M') + px.toFixed(1) + ' ' + py.toFixed(1);
        var lone = !pen && !(finite(sx[i + 1]) && finite(sy[i + 1]));
        pts.push([px, py, sx[i], sy[i], lone]); pen = true;
      }
      var g = el('g', {'class': 'series'}, plot);
      if (d) el('path', {d: d, fill: 'none', stroke: s.color, 'stroke-width': s.width || 2, 'stroke-dasharray': s.dash,
                        'stroke-linejoin': 'round'}, g);
      var showPts = s.points !== false && pts.length <= 60;
      pts.forEach(function (p) {
        if (!showPts && !p[4]) return;
        var c = el('circle', {cx: p[0].toFixed(1), cy: p[1].toFixed(1), r: s.width >= 3 ? 4.5 : s.width && s.width < 1.5 ? 2 : 3, fill: s.color}, g);
        tip(c, (s.name ? s.name + ' \u2014 ' : '') + (xo.name || 'x') + ' ' + fmtNumber(p[2], 8) + ': ' +
            (yo.unit === 'bytes' ? fmtBytes(p[3], 4) + ' (' + Math.round(p[3]) + ' B)' : format(p[3], yo.unit)));
      });
    });
    segs.forEach(function (s) {
      if (![s.x1, s.y1, s.x2, s.y2].every(finite)) return;
      var g = el('g', {'class': 'segment'}, plot);
      el('line', {x1: X(s.x1), y1: Y(s.y1), x2: X(s.x2), y2: Y(s.y2), stroke: s.color || '#222', 'stroke-width': 2.5,
                  'stroke-dasharray': s.dash || '6 4', 'stroke-opacity': 0.8}, g);
      if (s.label) tip(g, s.label);
    });
    if (!hasData) txt(svg, L + (W - L - R) / 2, (T + B) / 2, o.empty || 'no data', {'class': 'empty', 'text-anchor': 'middle'});
    if (legendItems.length) drawLegend(el('g', {'class': 'legend'}, svg), rows, L, B + 48);
    return svg;
  }

  function bars(o) {
    var f = frame(o, 'bars'), svg = f.svg, W = f.W, yo = o.y || {};
    var groups = o.groups || [], series = (o.series || []).filter(Boolean);
    series.forEach(function (s, i) { if (!s.color) s.color = PALETTE[i % PALETTE.length]; });
    var R = 14, T = o.title ? 30 : 12;
    var rows = legendLayout(series.map(function (s) { return {name: s.name, color: s.color, width: 8}; }), W - 110);
    var B = f.H - 30 - rows.length * 17 - 6;
    var vals = [];
    series.forEach(function (s) { (s.values || []).forEach(function (v) { if (finite(v)) vals.push(v); }); });
    var ys_ = yScale({unit: yo.unit, min: 0}, vals.concat([0]), T + 26, B), Y = ys_.map, L = leftMargin(ys_);
    var grid = el('g', {'class': 'grid'}, svg);
    ys_.ticks.forEach(function (v) {
      el('line', {x1: L, x2: W - R, y1: Y(v), y2: Y(v)}, grid);
      txt(svg, L - 6, Y(v) + 4, ys_.label(v), {'class': 'tick', 'text-anchor': 'end'});
    });
    el('line', {x1: L, x2: W - R, y1: B, y2: B, 'class': 'axis'}, svg);
    if (yo.label) { var yl = txt(svg, 0, 0, yo.label, {'class': 'axis-label', 'text-anchor': 'middle'});
      yl.setAttribute('transform', 'translate(13,' + ((T + B) / 2) + ') rotate(-90)'); }
    var gw = (W - L - R) / Math.max(1, groups.length), bw = Math.min(64, (gw - 16) / Math.max(1, series.length));
    groups.forEach(function (gname, gi) {
      var x0 = L + gi * gw + (gw - bw * series.length) / 2;
      txt(svg, L + gi * gw + gw / 2, B + 16, gname, {'class': 'tick group-label', 'text-anchor': 'middle'});
      series.forEach(function (s, si) {
        var v = (s.values || [])[gi], x = x0 + si * bw, g = el('g', {'class': 'bar'}, svg);
        if (!finite(v)) { txt(g, x + bw / 2, B - 4, 'n/a', {'class': 'bar-label', 'text-anchor': 'middle'}); return; }
        var y = Y(Math.max(0, v));
        el('rect', {x: x + 1, y: y, width: Math.max(1, bw - 2), height: Math.max(0, B - y), fill: s.color}, g);
        var lab = format(v, yo.unit), crowded = lab.length * 6.2 > bw - 2;  // stagger labels that would touch
        txt(g, x + bw / 2, y - 4 - (crowded && si % 2 ? 12 : 0), lab, {'class': 'bar-label', 'text-anchor': 'middle'});
        tip(g, gname + ' \u2014 ' + s.name + ': ' + (yo.unit === 'bytes' ? fmtBytes(v, 4) + ' (' + v + ' B)' : format(v, yo.unit)));
      });
    });
    drawLegend(el('g', {'class': 'legend'}, svg), rows, L, B + 34);
    return svg;
  }

  return {line: line, bars: bars, fmtBytes: fmtBytes, fmtPercent: fmtPercent, fmtNumber: fmtNumber, palette: PALETTE};
})();
