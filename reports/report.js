/* trainrepro report: reads the data object (reports/DATA.md) and draws the page.
 * Hashes: #render-all opens every scenario and draws every chart (for tests and printing);
 * #scenario=NAME opens that scenario, draws its charts and scrolls to it; #only=NAME shows that
 * scenario alone, opened, at the top of the page (for screenshots and for links in bug reports).
 * When done, #report-status carries data-done, data-errors, data-scenarios, data-charts,
 * data-scenarios-with-samples, data-charted-scenarios, data-render-ms, data-outcome-<outcome>, and
 * after a #scenario= or #only= hash data-scenario-opened (the name found, "" when none).
 */
(function () {
  'use strict';
  var errors = 0;
  window.addEventListener('error', function () { errors++; updateStatus(); });
  var consoleError = console.error;
  console.error = function () { errors++; updateStatus(); return consoleError.apply(console, arguments); };

  var OUTCOMES = ['failed', 'error', 'not-reproduced', 'reproduced', 'passed', 'skipped'];
  var OUTCOME_TEXT = {
    failed: 'something other than the expectation happened',
    error: 'could not be judged (bad file or infrastructure)',
    'not-reproduced': 'the expected bug was not found',
    reproduced: 'the expected bug was found, as intended',
    passed: 'behaved as expected', skipped: 'this machine cannot run it'
  };
  var SEVERITY = {failed: 0, error: 1, 'not-reproduced': 2, reproduced: 3, passed: 4, skipped: 5};
  var EXIT_TEXT = {0: 'every expectation met', 1: 'an expectation was not met',
                   2: 'bad scenario, config or usage', 3: 'infrastructure failure'};
  var state = {data: {}, scenarios: [], status: null, done: false, sortKey: 'outcome', sortDir: 1,
               filterText: '', shown: {}};

  // ---------- small helpers: every field may be missing or null ----------
  function arr(x) { return Array.isArray(x) ? x : []; }
  function obj(x) { return x && typeof x === 'object' && !Array.isArray(x) ? x : null; }
  function str(x) { return typeof x === 'string' ? x : (x === null || x === undefined ? '' : String(x)); }
  function num(x) { return typeof x === 'number' && isFinite(x) ? x : null; }
  function h(tag, attrs, kids) {
    var e = document.createElement(tag);
    if (attrs) for (var k in attrs) {
      if (attrs[k] === null || attrs[k] === undefined || attrs[k] === false) continue;
      if (k === 'text') e.textContent = attrs[k]; else if (k === 'cls') e.className = attrs[k];
      else if (k.slice(0, 2) === 'on') e.addEventListener(k.slice(2), attrs[k]); else e.setAttribute(k, attrs[k]);
    }
    arr(kids).forEach(function (c) { if (c !== null && c !== undefined && c !== false) e.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c))); });
    return e;
  }
  function guard(parent, what, fn) {
    try { fn(); } catch (err) {
      console.error('trainrepro report: ' + what + ': ' + (err && err.stack || err));
      if (parent) parent.appendChild(h('p', {cls: 'render-error', text: 'Could not draw ' + what + ': ' + (err && err.message || err)}));
    }
  }
  function bytes(v) { return num(v) === null ? 'n/a' : Charts.fmtBytes(v, 3) + (Math.abs(v) >= 1024 ? ' (' + Math.round(v).toLocaleString('en-US') + ' B)' : ''); }
  function int(v) { return num(v) === null ? 'n/a' : Math.round(v).toLocaleString('en-US'); }
  function secs(v) {
    v = num(v);
    if (v === null) return 'n/a';
    if (v > 0 && v < 0.0005) return '<1 ms';
    if (v < 1) return Math.round(v * 1000) + ' ms';
    if (v < 120) return v.toFixed(v < 10 ? 2 : 1) + ' s';
    return Math.floor(v / 60) + ' min ' + Math.round(v % 60) + ' s';
  }
  function perStep(v) { return num(v) === null ? 'n/a' : (v > 0 ? '+' : '') + Charts.fmtBytes(v, 3) + '/step'; }
  function outcomeOf(s) { var o = str(s.outcome); return SEVERITY.hasOwnProperty(o) ? o : 'error'; }
  function badge(outcome) { return h('span', {cls: 'badge o-' + outcome, text: outcome}); }
  // Text with each "Fix: …" highlighted (up to "; " or " (matched", or the end).
  function rich(s) {
    s = str(s);
    var span = h('span'), re = /Fix:\s*([\s\S]*?)(?=;\s|\s\(matched |$)/g, last = 0, m;
    while ((m = re.exec(s)) !== null) {
      if (m.index > last) span.appendChild(document.createTextNode(s.slice(last, m.index)));
      span.appendChild(h('mark', {cls: 'fix'}, [h('b', {text: 'Fix: '}), m[1]]));
      last = m.index + m[0].length;
      if (m[0].length === 0) re.lastIndex++;
    }
    if (last < s.length) span.appendChild(document.createTextNode(s.slice(last)));
    return span;
  }
  function kv(rows) {
    var dl = h('dl', {cls: 'kv'});
    rows.forEach(function (r) {
      if (!r || r[1] === null || r[1] === undefined || r[1] === '') return;
      dl.appendChild(h('dt', {text: r[0]}));
      dl.appendChild(h('dd', {cls: r[2] || null}, [typeof r[1] === 'object' ? r[1] : String(r[1])]));
    });
    return dl;
  }
  function oneLine(s) {
    var t = str(s.found) || str(s.diagnosis);
    return t.length > 300 ? t.slice(0, 297) + '\u2026' : t;
  }
  // The engine that trained a scenario, short: "reference", "deepspeed 0.18.5".
  function engineOf(s) { return str(s.engine).split(' (')[0] || 'reference'; }
  // A scenario run on several engines (a release matrix) is one entry per engine.
  function keyOf(s, i) {
    var name = str(s.name) || str(s.file) || ('scenario #' + (i + 1));
    return engineOf(s) === 'reference' ? name : name + ' [' + engineOf(s) + ']';
  }
  // Engines in release order: the reference engine first, then DeepSpeed's releases by number,
  // then other engines (fsdp2) by name.
  function engineOrder(a, b) {
    function parts(e) {
      if (e === 'reference') return [-1];
      if (e.indexOf('deepspeed') !== 0) return [1e9];
      return e.replace(/^\D+/, '').split('.').map(Number);
    }
    var x = parts(a), y = parts(b);
    for (var i = 0; i < Math.max(x.length, y.length); i++) {
      var d = (x[i] || 0) - (y[i] || 0);
      if (d) return d;
    }
    return a < b ? -1 : (a > b ? 1 : 0);
  }
  // Results from more than one engine: each scenario's outcome on each, side by side (what
  // scripts/release-matrix draws: the catalogue on a list of DeepSpeed releases).
  function engineMatrix(root) {
    var engines = [], names = [], cell = {};
    state.scenarios.forEach(function (sc) {
      var e = engineOf(sc.s), n = str(sc.s.name) || sc.key;
      if (engines.indexOf(e) < 0) engines.push(e);
      if (names.indexOf(n) < 0) names.push(n);
      cell[n + '\u0000' + e] = sc;
    });
    if (engines.length < 2) return;
    engines.sort(engineOrder);
    names.sort();
    var sec = h('section', {id: 'engine-matrix'}, [h('h2', {text: 'Outcome by engine'}),
      h('p', {cls: 'hint', text: names.length + ' scenarios on ' + engines.length + ' engines. A cell links to that run\u2019s details; an empty cell was not run there.'})]);
    // A row whose engines disagree says why: each engine whose outcome is not the first
    // engine's, with its diagnosis (an engine's own explanation, "on FSDP2 …") or its finding.
    function difference(n) {
      var ran = engines.map(function (e) { return cell[n + '\u0000' + e]; }).filter(Boolean);
      if (ran.length < 2) return '';
      var first = ran[0];
      return ran.filter(function (sc) { return sc.outcome !== first.outcome; }).map(function (sc) {
        // A skip's reason starts "skipped: " itself: said once, after the outcome.
        var why = (str(sc.s.diagnosis) || oneLine(sc.s)).replace(/^skipped: /, '');
        return engineOf(sc.s) + ' ' + sc.outcome + ': ' + why;
      }).join('; ');
    }
    var differs = names.some(function (n) { return difference(n) !== ''; });
    var head = h('tr', {}, [h('th', {text: 'scenario'})].concat(engines.map(function (e) { return h('th', {text: e}); }))
      .concat(differs ? [h('th', {text: 'why the outcomes differ'})] : []));
    var body = h('tbody');
    names.forEach(function (n) {
      var why = difference(n);
      body.appendChild(h('tr', {cls: why ? 'differs' : null}, [h('td', {cls: 'name', text: n})].concat(engines.map(function (e) {
        var sc = cell[n + '\u0000' + e];
        if (!sc) return h('td', {text: ''});
        return h('td', {title: oneLine(sc.s)}, [h('a', {href: '#scenario=' + encodeURIComponent(sc.key)}, [badge(sc.outcome)])]);
      })).concat(differs ? [h('td', {cls: 'why', text: why})] : [])));
    });
    sec.appendChild(h('div', {cls: 'table-wrap'}, [h('table', {cls: 'engine-matrix'}, [h('thead', {}, [head]), body])]));
    root.appendChild(sec);
  }

  // ---------- status ----------
  function updateStatus() {
    var st = state.status;
    if (!st || !state.done) return;
    var withSamples = 0, charted = 0;
    state.scenarios.forEach(function (sc) {
      if (!sc.hasSamples) return;
      withSamples++;
      if (sc.section && sc.section.querySelector('svg.chart')) charted++;
    });
    st.setAttribute('data-done', '1');
    st.setAttribute('data-errors', String(errors));
    st.setAttribute('data-scenarios', String(state.scenarios.length));
    st.setAttribute('data-charts', String(document.querySelectorAll('svg.chart').length));
    st.setAttribute('data-scenarios-with-samples', String(withSamples));
    st.setAttribute('data-charted-scenarios', String(charted));
    st.setAttribute('data-render-ms', String(Math.round(performance.now())));
    OUTCOMES.forEach(function (o) { st.setAttribute('data-outcome-' + o, String(state.counts[o] || 0)); });
  }

  // ---------- summary ----------
  function summary(root) {
    var d = state.data, totals = obj(d.totals) || {}, runs = arr(d.runs).map(obj).filter(Boolean);
    var counts = {}, fromData = obj(totals.by_outcome), computed = {};
    OUTCOMES.forEach(function (o) { computed[o] = 0; });
    state.scenarios.forEach(function (sc) { computed[sc.outcome]++; });
    OUTCOMES.forEach(function (o) { counts[o] = fromData && num(fromData[o]) !== null ? fromData[o] : computed[o]; });
    state.counts = counts;
    var sec = h('section', {cls: 'summary', id: 'summary'});
    root.appendChild(sec);
    var bad = counts.failed + counts.error + counts['not-reproduced'];
    var total = num(totals.scenarios) !== null ? totals.scenarios : state.scenarios.length;
    sec.appendChild(h('p', {cls: 'verdict ' + (bad ? 'verdict-bad' : 'verdict-good'),
      text: bad ? bad + ' of ' + total + ' scenarios need attention: ' +
        ['failed', 'error', 'not-reproduced'].filter(function (o) { return counts[o]; }).map(function (o) { return counts[o] + ' ' + o; }).join(', ')
        : 'All ' + total + ' scenarios met their expectations.'}));
    var badges = h('div', {cls: 'outcome-badges'});
    OUTCOMES.forEach(function (o) {
      badges.appendChild(h('button', {type: 'button', cls: 'big-badge o-' + o + (counts[o] ? '' : ' zero'), title: OUTCOME_TEXT[o] + ' \u2014 click to show only these',
        onclick: function () { setOnly(o); }}, [h('span', {cls: 'count', text: String(counts[o])}), h('span', {cls: 'label', text: o})]));
    });
    var ec = num(totals.exit_code);
    badges.appendChild(h('div', {cls: 'big-badge exit ' + (ec ? 'exit-bad' : 'exit-good'), title: 'the worst exit code over all scenarios'},
      [h('span', {cls: 'count', text: ec === null ? '?' : String(ec)}), h('span', {cls: 'label', text: 'exit code' + (EXIT_TEXT[ec] ? ': ' + EXIT_TEXT[ec] : '')})]));
    sec.appendChild(badges);
    var mismatch = OUTCOMES.filter(function (o) { return fromData && num(fromData[o]) !== null && fromData[o] !== computed[o]; });
    if (mismatch.length) sec.appendChild(h('p', {cls: 'warn-box', text: 'The totals (' + mismatch.map(function (o) { return o + ' ' + fromData[o]; }).join(', ') +
      ') differ from the scenarios listed below (' + mismatch.map(function (o) { return o + ' ' + computed[o]; }).join(', ') + ').'}));

    function uniq(key) { var seen = []; runs.forEach(function (r) { var v = str(r[key]); if (v && seen.indexOf(v) < 0) seen.push(v); }); return seen.join(', '); }
    // Start times: one run's, or the first and last of many (CTest runs each scenario alone).
    var starts = runs.map(function (r) { return str(r.started_at); }).filter(Boolean).sort();
    var started = starts.length <= 1 ? (starts[0] || '') :
      starts[0] + ' \u2026 ' + starts[starts.length - 1] + ' (' + runs.length + ' runs)';
    var cuda = uniq('cuda_version');
    var meta = kv([
      ['Total time', secs(totals.seconds) + ' (sum of the scenarios\u2019 own times)'],
      ['Machine', uniq('machine')], ['Host', uniq('host')],
      ['Git commit', uniq('git_commit'), 'mono'], ['Command line', runs.length === 1 ? str(runs[0].command_line) : '', 'mono'],
      ['Started', started],
      ['trainrepro', uniq('trainrepro_version') || str(d.trainrepro_version)],
      ['torch', uniq('torch_version')], ['CUDA', runs.length ? (cuda || 'none') : ''],
      ['DeepSpeed release(s)', arr(d.deepspeed_versions).map(str).join(', ')],
      ['Report generated', str(d.generated_at) + (str(d.trainrepro_version) ? ' by trainrepro ' + str(d.trainrepro_version) : '')],
      ['Sources', arr(d.sources).map(str).join(', '), 'mono']
    ]);
    sec.appendChild(meta);
    if (runs.length > 1) {
      var t = h('table', {cls: 'runs'}, [h('thead', {}, [h('tr', {}, ['started', 'host', 'machine', 'commit', 'command line', 'scenarios'].map(function (c) { return h('th', {text: c}); }))])]);
      var tb = h('tbody'); t.appendChild(tb);
      runs.forEach(function (r) {
        tb.appendChild(h('tr', {}, [str(r.started_at), str(r.host), str(r.machine), str(r.git_commit), str(r.command_line), str(r.scenarios)].map(function (c, i) {
          return h('td', {cls: i >= 3 && i <= 4 ? 'mono' : null, text: c}); })));
      });
      // Many runs (one per CTest scenario test) fold away: the summary above already says them.
      var fold = h('details', {cls: 'runs-fold'}, [h('summary', {text: runs.length + ' runs: when, where and how each was started'}), t]);
      // A release matrix (several engines) folds it too: its table is what the page is for.
      var engines = {};
      state.scenarios.forEach(function (sc) { engines[engineOf(sc.s)] = true; });
      if (runs.length <= 5 && Object.keys(engines).length < 2) fold.open = true;
      sec.appendChild(fold);
    }
    var unreadable = arr(d.unreadable).map(obj).filter(Boolean);
    if (unreadable.length) {
      sec.appendChild(h('div', {cls: 'warn-box'}, [h('strong', {text: unreadable.length + ' results file' + (unreadable.length > 1 ? 's' : '') + ' could not be read and are not counted:'}),
        h('ul', {}, unreadable.map(function (u) { return h('li', {}, [h('code', {text: str(u.file)}), ' \u2014 ', str(u.message)]); }))]));
    }
  }

  // ---------- performance history (report --perf-history) ----------
  // Per benchmark, each figure over the runs (oldest first): the median of a run's repetitions,
  // their lowest and highest, and the change points. Benchmarks with a change point in a judged
  // figure start open.
  function performanceHistory(root) {
    var p = obj(state.data.performance);
    if (!p) return;
    var runs = arr(p.runs).map(obj).filter(Boolean);
    var xs = runs.map(function (r, i) { return i + 1; });
    var sec = h('section', {id: 'performance'}, [h('h2', {text: 'Performance history'}),
      h('p', {cls: 'hint', text: runs.length + ' perf runs from ' + str(p.folder) + ', oldest first (x: run number). ' +
        'Each point is a run\u2019s median over its repetitions, the thin dashed lines their lowest and highest. ' +
        'A red line marks a change point: the level moved with Mann\u2013Whitney p < ' + str(p.alpha) +
        ' by at least ' + Charts.fmtPercent(num(p.min_effect) * 100) + ' and stayed there.'})]);
    root.appendChild(sec);
    var verdict = h('p', {cls: 'verdict'});
    sec.appendChild(verdict);
    var t = h('table', {cls: 'runs'}, [h('thead', {}, [h('tr', {}, ['run', 'commit', 'date', 'machine', 'file'].map(function (c) { return h('th', {text: c}); }))])]);
    var tb = h('tbody'); t.appendChild(tb);
    runs.forEach(function (r, i) {
      tb.appendChild(h('tr', {}, [String(i + 1), str(r.commit), str(r.date), str(r.machine), str(r.file)].map(function (c, j) {
        return h('td', {cls: j === 1 || j === 4 ? 'mono' : null, text: c}); })));
    });
    sec.appendChild(h('details', {cls: 'runs-fold'}, [h('summary', {text: runs.length + ' runs: commit, date, file'}), t]));
    var unreadable = arr(p.unreadable).map(str).filter(Boolean);
    if (unreadable.length) {
      sec.appendChild(h('div', {cls: 'warn-box'}, [h('strong', {text: unreadable.length + ' perf run file(s) could not be read:'}),
        h('ul', {}, unreadable.map(function (u) { return h('li', {text: u}); }))]));
    }
    var moved = [], worse = 0;
    arr(p.benchmarks).map(obj).filter(Boolean).forEach(function (b) {
      var row = h('div', {cls: 'chart-row'}), changes = [];
      arr(b.figures).map(obj).filter(Boolean).forEach(function (f) {
        var marks = arr(f.change_points).map(obj).filter(Boolean).map(function (c) {
          var run = runs[c.run] || {};
          var label = '\u00d7' + Charts.fmtNumber(num(c.ratio), 3) + ' at run ' + (c.run + 1) + (str(run.commit) ? ' (' + str(run.commit).slice(0, 7) + ')' : '');
          if (f.judged) {
            changes.push(str(f.title) + ' ' + label + ', p ' + Charts.fmtNumber(num(c.p), 2));
            if (num(c.ratio) > 1) worse++;  // every judged figure is worse when larger
          }
          return {x: c.run + 1, label: label};
        });
        var bytes = str(f.unit) === 'bytes';
        row.appendChild(Charts.line({title: str(f.title) + (f.judged ? '' : ' \u2014 information, not judged'), width: 560, height: 240,
          x: {label: 'run (oldest first)', name: 'run'}, y: {label: str(f.unit), unit: bytes ? 'bytes' : undefined},
          series: [{name: 'median', x: xs, y: arr(f.median)},
                   {name: 'lowest and highest repetition', x: xs, y: arr(f.low), dash: '3 3', width: 1, points: false, color: '#7aa6d8'},
                   {name: 'highest', x: xs, y: arr(f.high), dash: '3 3', width: 1, points: false, color: '#7aa6d8', legend: false}],
          markers: marks}));
      });
      if (changes.length) moved.push(str(b.name));
      var box = h('details', {cls: 'perf-benchmark'}, [h('summary', {text: str(b.name) + (changes.length ? ' \u2014 ' + changes.join('; ') : '')}), row]);
      if (changes.length) box.open = true;
      sec.appendChild(box);
    });
    verdict.className = 'verdict ' + (worse ? 'verdict-bad' : 'verdict-good');
    verdict.textContent = moved.length ? moved.length + ' benchmark(s) changed level' + (worse ? ' (' + worse + ' change(s) for the worse)' : ' (each for the better)') + ': ' +
                                         moved.join(', ') + ' (open below). A change point says where to look; `perf compare --rerun-all` says whether it is real.'
                                       : 'No change point in any judged figure over these runs.';
  }

  // ---------- the table ----------
  var COLUMNS = [
    {key: 'outcome', label: 'Outcome', val: function (sc) { return SEVERITY[sc.outcome]; }},
    {key: 'name', label: 'Scenario', val: function (sc) { return sc.key.toLowerCase(); }},
    {key: 'folder', label: 'Folder', val: function (sc) { return str(sc.s.folder).toLowerCase(); }},
    {key: 'tags', label: 'Tags', val: function (sc) { return arr(sc.s.tags).join(' ').toLowerCase(); }},
    {key: 'seconds', label: 'Time', val: function (sc) { return num(sc.s.seconds) === null ? -1 : sc.s.seconds; }},
    {key: 'found', label: 'Found / diagnosis', val: function (sc) { return oneLine(sc.s).toLowerCase(); }}
  ];
  function table(root) {
    var sec = h('section', {id: 'scenario-table'});
    root.appendChild(sec);
    sec.appendChild(h('h2', {text: 'Scenarios'}));
    var controls = h('div', {cls: 'controls'});
    var input = h('input', {type: 'search', placeholder: 'Filter: name, folder, tag, text\u2026', 'aria-label': 'filter scenarios',
      oninput: function () { state.filterText = input.value.toLowerCase(); applyFilter(); }});
    controls.appendChild(input);
    state.checks = {};
    OUTCOMES.forEach(function (o) {
      state.shown[o] = true;
      var cb = h('input', {type: 'checkbox', checked: 'checked', onchange: function () { state.shown[o] = cb.checked; applyFilter(); }});
      state.checks[o] = cb;
      controls.appendChild(h('label', {cls: 'check o-' + o}, [cb, ' ' + o + ' (' + (state.counts[o] || 0) + ')']));
    });
    controls.appendChild(h('button', {type: 'button', text: 'show all', onclick: function () { setOnly(null); }}));
    state.countLine = h('span', {cls: 'count-line'});
    controls.appendChild(state.countLine);
    sec.appendChild(controls);
    var thr = h('tr');
    COLUMNS.forEach(function (c) {
      var th = h('th', {tabindex: '0', 'data-key': c.key, title: 'sort by ' + c.label.toLowerCase(), text: c.label,
        onclick: function () { sortBy(c.key); }, onkeydown: function (e) { if (e.key === 'Enter') sortBy(c.key); }});
      thr.appendChild(th);
    });
    state.tbody = h('tbody');
    state.thead = h('thead', {}, [thr]);
    var cols = h('colgroup', {}, COLUMNS.map(function (c) { return h('col', {cls: 'c-' + c.key}); }));
    sec.appendChild(h('div', {cls: 'table-wrap'}, [h('table', {cls: 'scenarios'}, [cols, state.thead, state.tbody])]));
    state.scenarios.forEach(function (sc) {
      var s = sc.s, tags = arr(s.tags).map(str);
      sc.row = h('tr', {cls: 'row o-' + sc.outcome}, [
        h('td', {}, [badge(sc.outcome)]),
        h('td', {cls: 'name'}, [h('a', {href: '#scenario=' + encodeURIComponent(sc.key), text: sc.key})]),
        h('td', {cls: 'folder', text: str(s.folder)}),
        h('td', {cls: 'tags'}, tags.map(function (t) { return h('span', {cls: 'tag', text: t}); })),
        h('td', {cls: 'num', text: secs(s.seconds)}),
        h('td', {cls: 'found', title: str(s.found) + (s.diagnosis ? '\n' + str(s.diagnosis) : '')}, [h('div', {text: oneLine(s)})])
      ]);
      sc.search = [sc.key, s.folder, s.file, tags.join(' '), s.found, s.diagnosis, s.expected, sc.outcome, s.description].map(str).join('\n').toLowerCase();
      state.tbody.appendChild(sc.row);
    });
    sortBy('outcome', 1);
    applyFilter();
  }
  function sortBy(key, dir) {
    state.sortDir = dir || (state.sortKey === key ? -state.sortDir : 1);
    state.sortKey = key;
    var col = COLUMNS.filter(function (c) { return c.key === key; })[0], nameCol = COLUMNS[1];
    var list = state.scenarios.slice().sort(function (a, b) {
      var x = col.val(a), y = col.val(b);
      if (x < y) return -state.sortDir; if (x > y) return state.sortDir;
      var p = nameCol.val(a), q = nameCol.val(b);
      return p < q ? -1 : p > q ? 1 : a.index - b.index;
    });
    list.forEach(function (sc) { state.tbody.appendChild(sc.row); });
    Array.prototype.forEach.call(state.thead.querySelectorAll('th'), function (th) {
      th.setAttribute('aria-sort', th.getAttribute('data-key') === key ? (state.sortDir > 0 ? 'ascending' : 'descending') : 'none');
    });
  }
  function applyFilter() {
    var n = 0, words = state.filterText.split(/\s+/).filter(Boolean);
    state.scenarios.forEach(function (sc) {
      var ok = state.shown[sc.outcome] && words.every(function (w) { return sc.search.indexOf(w) >= 0; });
      sc.row.hidden = !ok;
      if (sc.section) sc.section.hidden = !ok;
      if (ok) n++;
    });
    if (state.countLine) state.countLine.textContent = 'showing ' + n + ' of ' + state.scenarios.length;
  }
  function setOnly(o) {
    OUTCOMES.forEach(function (x) { state.shown[x] = !o || x === o; if (state.checks) state.checks[x].checked = state.shown[x]; });
    applyFilter();
    var t = document.getElementById('scenario-table');
    if (o && t) t.scrollIntoView();
  }

  // ---------- one scenario ----------
  function section(root, sc) {
    var s = sc.s, det = h('details', {cls: 'scenario o-' + sc.outcome, id: 's-' + sc.index, 'data-name': sc.key});
    sc.section = det;
    det.appendChild(h('summary', {}, [badge(sc.outcome), h('span', {cls: 'sname', text: sc.key}),
      h('span', {cls: 'sfolder', text: str(s.folder)}), h('span', {cls: 'stime', text: secs(s.seconds)}),
      h('span', {cls: 'sline', text: oneLine(s)})]));
    var body = h('div', {cls: 'body'});
    det.appendChild(body);
    guard(body, 'the overview of ' + sc.key, function () { overview(body, sc); });
    sc.chartHost = h('div', {cls: 'charts'});
    body.appendChild(sc.chartHost);
    det.addEventListener('toggle', function () {
      if (sc.deferred) { sc.deferred = false; return; }  // opened at load: drawn when it comes into view
      if (det.open) renderCharts(sc);
    });
    root.appendChild(det);
  }
  function overview(body, sc) {
    var s = sc.s;
    if (str(s.description)) body.appendChild(h('p', {cls: 'description', text: str(s.description)}));
    var ref = s.reference && typeof s.reference === 'object' ? s.reference : null;
    var refUrl = ref && /^https:\/\//.test(str(ref.url)) ? str(ref.url) : '';
    body.appendChild(kv([
      ['Reported', refUrl ? h('span', {}, [h('a', {href: refUrl, rel: 'noopener', text: refUrl}),
        ' (' + str(ref.project) + '; affected ' + str(ref.affected) + '; fixed ' + str(ref.fixed) + ')']) : null],
      ['Expected', str(s.expected)], ['Found', rich(s.found), 'found'],
      ['Diagnosis', str(s.diagnosis) ? rich(s.diagnosis) : null, 'diagnosis'],
      ['Outcome', h('span', {}, [badge(sc.outcome), ' exit code ' + (num(s.exit_code) === null ? '?' : s.exit_code) +
        (str(s.error_source) && s.error_source !== 'none' ? ', error source: ' + str(s.error_source) : '')])],
      ['File', str(s.file), 'mono'], ['Tags', arr(s.tags).map(str).join(', ')]
    ]));
    var warnings = arr(s.warnings).map(str);
    if (warnings.length) body.appendChild(h('div', {cls: 'warn-box'}, [h('strong', {text: warnings.length + ' warning' + (warnings.length > 1 ? 's' : '') + ':'}),
      h('ul', {}, warnings.map(function (w) { return h('li', {text: w}); }))]));
    var row = h('div', {cls: 'facts'});
    body.appendChild(row);
    var plan = obj(s.plan);
    if (plan) guard(row, 'the plan', function () { row.appendChild(planBox(plan)); });
    var t = obj(s.timings) || {};
    row.appendChild(h('div', {cls: 'box'}, [h('h4', {text: 'Timings and versions'}), kv([
      ['Total', secs(s.seconds)], ['Golden load', num(t.golden_seconds) !== null ? secs(t.golden_seconds) : ''],
      ['Training', num(t.training_seconds) !== null ? secs(t.training_seconds) : ''],
      ['Judging', num(t.judging_seconds) !== null ? secs(t.judging_seconds) : ''],
      ['DeepSpeed', str(s.deepspeed_version)], ['torch', str(s.torch_version)]])]));
  }
  function planBox(p) {
    var given = obj(p.given) || {}, keys = ['train_batch_size', 'train_micro_batch_size_per_gpu', 'gradient_accumulation_steps'];
    var t = h('table', {cls: 'plan'}, [h('thead', {}, [h('tr', {}, [h('th', {text: 'batch key'}), h('th', {text: 'as given'}), h('th', {text: 'resolved'})])])]);
    var tb = h('tbody'); t.appendChild(tb);
    keys.forEach(function (k) {
      var g = given[k], notSet = g === null || g === undefined;
      tb.appendChild(h('tr', {cls: !notSet && g !== p[k] ? 'differs' : null}, [h('td', {cls: 'mono', text: k}),
        h('td', {cls: notSet ? 'not-set' : 'num', text: notSet ? 'not set' : str(g)}), h('td', {cls: 'num', text: str(p[k])})]));
    });
    var opt = obj(p.optimizer), golden = obj(p.golden);
    var optText = opt ? str(opt.type) + ' (' + Object.keys(opt).filter(function (k) { return k !== 'type' && k !== 'type_as_written'; })
      .map(function (k) { return k + ' ' + (Array.isArray(opt[k]) ? opt[k].join('/') : str(opt[k])); }).join(', ') + ')' : '';
    return h('div', {cls: 'box'}, [h('h4', {text: 'Resolved plan'}), t, kv([
      ['World size', str(p.world_size)], ['Device', str(p.device)], ['dtype / precision', [str(p.dtype), str(p.precision)].filter(Boolean).join(' / ')],
      ['ZeRO stage', str(p.zero_stage)], ['Gradient clipping', str(p.gradient_clipping)], ['Optimizer', optText],
      ['Golden', golden ? 'batch ' + str(golden.train_batch_size) + ', ' + str(golden.steps) + ' steps' : '']])]);
  }

  // ---------- charts, drawn when a scenario is opened ----------
  function renderCharts(sc) {
    if (sc.rendered) return;
    sc.rendered = true;
    var host = sc.chartHost, s = sc.s;
    guard(host, 'the gradient chart', function () { gradients(host, obj(s.gradients), obj(s.losses), s); });
    guard(host, 'the memory charts', function () { memory(host, obj(s.memory)); });
    guard(host, 'the ZeRO charts', function () { zero(host, obj(s.zero)); });
    updateStatus();
  }
  function block(host, title, cls) {
    var b = h('div', {cls: 'chart-block ' + (cls || '')}, [h('h3', {text: title})]);
    host.appendChild(b);
    return b;
  }
  function gradients(host, g, losses, s) {
    if (!g && !losses) return;
    var b = block(host, 'Gradients and loss against the golden', 'grad');
    var row = h('div', {cls: 'chart-row'});
    if (g) {
      var steps = arr(g.steps), tol = obj(g.tolerance) || {}, ff = num(g.first_failure_step);
      b.appendChild(kv([
        ['Tolerance', 'rtol ' + Charts.fmtNumber(tol.rtol) + ', atol ' + Charts.fmtNumber(tol.atol) + (str(tol.reason) ? ' \u2014 ' + str(tol.reason) : '')],
        ['First failing step', ff === null ? 'none: every compared step agreed' : 'optimizer step ' + ff, ff === null ? 'good' : 'bad'],
        ['Mismatch', str(g.mismatch)], ['Divergence', str(g.divergence)]]));
      var diag = obj(g.diagnosis);
      if (diag) {
        var same = str(diag.explanation) && str(s.diagnosis).indexOf(str(diag.explanation)) === 0;  // already shown above
        b.appendChild(kv([['Diagnosis', h('span', {}, [h('code', {text: str(diag.name)}), num(diag.step) !== null ? ' at optimizer step ' + diag.step : '',
          same ? ' (explained above)' : ': ', same ? null : rich(diag.explanation)])]]));
        var hyp = arr(diag.hypotheses).map(obj).filter(Boolean);
        if (hyp.length) b.appendChild(h('table', {cls: 'small'}, [h('thead', {}, [h('tr', {}, [h('th', {text: 'hypothesis tested'}), h('th', {text: 'relative error'})])]),
          h('tbody', {}, hyp.map(function (x) { return h('tr', {cls: x.hypothesis === diag.name ? 'chosen' : null}, [h('td', {cls: 'mono', text: str(x.hypothesis)}),
            h('td', {cls: 'num', text: num(x.relative_error) === null ? 'n/a' : Charts.fmtNumber(x.relative_error, 3)})]); }))]));
      }
      if (steps.length) {
        var tensors = arr(g.tensors).map(obj).filter(Boolean).map(function (t) {
          var p = arr(t.percent), mx = -Infinity;
          p.forEach(function (v) { if (num(v) !== null && v > mx) mx = v; });
          return {name: str(t.name), y: p, max: mx};
        });
        var ranked = tensors.slice().sort(function (a, c) { return c.max - a.max; }), TOP = 6;
        var series = [];
        ranked.slice(TOP).forEach(function (t) { series.push({name: t.name, x: steps, y: t.y, color: '#b8b8b8', width: 1.2, legend: false}); });
        if (ranked.length > TOP) series.push({name: (ranked.length - TOP) + ' more tensors (grey)', x: [], y: [], color: '#b8b8b8', width: 1.2});
        ranked.slice(0, TOP).forEach(function (t, i) { series.push({name: t.name, x: steps, y: t.y, color: Charts.palette[i]}); });
        row.appendChild(Charts.line({title: 'Tolerance used per tensor (worst element; log scale)', height: 300,
          x: {label: 'optimizer step', name: 'step'}, y: {label: '% of tolerance', unit: 'percent', log: true}, series: series,
          refLines: [{y: 100, label: 'tolerance = 100 %'}],
          markers: ff === null ? [] : [{x: ff, label: 'first failure: step ' + ff}]}));
      }
    }
    // Several ranks: the run's loss is rank 0's, over its own micro-batches only, so it differs
    // from the golden's whole-batch loss even when every gradient agrees. Say so on the chart.
    var plan = obj(s && s.plan), ranks = plan && num(plan.world_size) !== null ? plan.world_size : 1;
    var runName = ranks > 1 ? 'run (rank 0\u2019s micro-batches only)' : 'run';
    if (losses && arr(losses.steps).length) {
      row.appendChild(Charts.line({title: 'Loss per optimizer step: run vs golden', height: 300,
        x: {label: 'optimizer step', name: 'step'}, y: {label: 'loss'},
        series: [{name: 'golden', x: arr(losses.steps), y: arr(losses.golden), color: '#555', width: 4},
                 {name: runName, x: arr(losses.steps), y: arr(losses.run), color: '#d55e00', dash: '5 3'}]}));
    }
    if (row.childNodes.length) b.appendChild(row);
    if (losses && ranks > 1) {
      b.appendChild(h('p', {cls: 'note', text: 'With ' + ranks + ' ranks the run\u2019s loss is rank 0\u2019s, over the 1/' + ranks +
        ' of each batch it trains on; the golden\u2019s is over the whole batch. They differ even when the gradients agree (compare the gradients, left).'}));
    }
    if (losses) {
      var ls = arr(losses.steps), missing = function (key) {
        var ys = arr(losses[key]);
        return ls.filter(function (st, i) { return num(ys[i]) === null; });
      };
      [['run', 'the run\u2019s loss'], ['golden', 'the golden loss']].forEach(function (k) {
        var m = missing(k[0]);
        if (m.length) b.appendChild(h('p', {cls: 'note', text: k[1].charAt(0).toUpperCase() + k[1].slice(1) + ' is NaN, infinite or not known at step' +
          (m.length > 1 ? 's ' : ' ') + (m.length > 12 ? m.slice(0, 12).join(', ') + ', \u2026 (' + m.length + ' steps)' : m.join(', ')) + ' (gaps in the chart).'}));
      });
    }
  }
  function fitSeg(f, label, color) {
    f = obj(f);
    if (!f || num(f.from_step) === null || num(f.to_step) === null) return null;
    return {x1: f.from_step, y1: f.from_bytes, x2: f.to_step, y2: f.to_bytes, color: color || '#111',
            label: label + ': ' + perStep(f.bytes_per_step), legend: label + ' ' + perStep(f.bytes_per_step)};
  }
  function fitText(f) {
    f = obj(f);
    if (!f) return '';
    return perStep(f.bytes_per_step) + ' over steps ' + str(f.from_step) + '\u2013' + str(f.to_step) +
      (num(f.windows) !== null ? '; grows in every window: ' + (f.grows_in_every_window ? 'yes' : 'no') + ' (' + f.windows + ' windows)' : '');
  }
  function memory(host, m) {
    if (!m) return;
    var b = block(host, 'Memory per optimizer step', 'mem'), fits = obj(m.fits) || {};
    var dev = str(m.device) || 'cpu', steps = arr(m.steps), warm = num(m.warmup_steps);
    var oom = num(m.out_of_memory_step);
    if (oom !== null) b.appendChild(h('p', {cls: 'oom', text: 'Out of memory projected at optimizer step ~' + int(oom) +
      (num(m.capacity_bytes) !== null ? ': at the fitted rate the ' + Charts.fmtBytes(m.capacity_bytes) + ' of ' + (dev === 'cuda' ? 'GPU memory' : 'RAM') + ' run out there.' : '.')}));
    b.appendChild(kv([
      ['Judged', m.judged === false ? 'no \u2014 ' + str(m.not_judged_reason) : (m.judged ? 'yes, after ' + (warm === null ? '?' : warm) + ' warm-up steps, windows of ' + str(m.window) + ' steps' : '')],
      ['Diagnoses', arr(m.diagnoses).map(str).join(', '), 'mono bad'],
      ['Tensor trend', fitText(fits.tensor)], ['Host heap trend', fitText(fits.host)], ['CUDA reserved trend', fitText(fits.cuda_reserved)],
      ['Peak tensor bytes', num(m.peak_tensor_bytes) !== null ? bytes(m.peak_tensor_bytes) : ''],
      ['Budget peak', num(m.budget_peak_bytes) !== null ? bytes(m.budget_peak_bytes) : ''],
      ['Capacity', num(m.capacity_bytes) !== null ? bytes(m.capacity_bytes) : ''], ['Notes', str(m.notes)]]));
    arr(m.explanations).forEach(function (e) { b.appendChild(h('p', {cls: 'explanation'}, [rich(e)])); });
    if (steps.length) {
      var row = h('div', {cls: 'chart-row'}), ranges = [];
      if (warm !== null && warm > 0) ranges.push({from: Math.min.apply(null, steps.filter(function (v) { return num(v) !== null; }).concat([1])) - 0.5,
                                                   to: warm + 0.5, label: 'warm-up', legend: 'warm-up (not judged)'});
      var tb = arr(m.tensor_bytes), alloc = m.cuda_allocated_bytes, resv = m.cuda_reserved_bytes;
      var series = [{name: 'live tensor bytes (' + dev + ')', x: steps, y: tb}];
      if (Array.isArray(alloc) && alloc.join() !== tb.join()) series.push({name: 'CUDA allocated', x: steps, y: alloc, color: '#009e73'});
      if (Array.isArray(resv)) series.push({name: 'CUDA reserved', x: steps, y: resv, color: '#7f3c8d', dash: '4 3'});
      var segs = [fitSeg(fits.tensor, 'fit'), fitSeg(fits.cuda_reserved, 'reserved fit', '#7f3c8d')].filter(Boolean);
      row.appendChild(Charts.line({title: 'Live tensor memory' + (dev.indexOf('cuda') === 0 ? ' (' + dev + ')' : ''), height: 300,
        x: {label: 'optimizer step (boundary samples)', name: 'step'}, y: {label: 'bytes', unit: 'bytes'},
        series: series, ranges: ranges, segments: segs}));
      var hh = arr(m.host_heap_bytes);
      if (hh.some(function (v) { return num(v) !== null; }) || fits.host) {
        row.appendChild(Charts.line({title: 'Host heap beyond tensors', height: 300,
          x: {label: 'optimizer step (boundary samples)', name: 'step'}, y: {label: 'bytes', unit: 'bytes'},
          series: [{name: 'host heap', x: steps, y: hh, color: '#e69f00'}], ranges: ranges,
          segments: [fitSeg(fits.host, 'fit')].filter(Boolean), empty: 'host heap not sampled'}));
      }
      b.appendChild(row);
    }
    var alive = str(m.surviving), sv = obj(m.survivors_by_birth_step);
    if (alive || (sv && arr(sv.allocations).some(function (v) { return v; }))) {
      var box = h('div', {cls: 'alive'}, [h('h4', {text: 'What is alive'}), alive ? h('p', {text: alive}) : null]);
      if (sv) box.appendChild(survivors(sv));
      b.appendChild(box);
    }
  }
  // Allocations still alive by the step that made them, runs of equal counts merged.
  function survivors(sv) {
    // steps: the birth step of each count (sampled on long runs); first_step: older data.
    var first = num(sv.first_step) === null ? 0 : sv.first_step, a = arr(sv.allocations), runs = [];
    var st = arr(sv.steps);
    a.forEach(function (v, i) {
      var step = num(st[i]) === null ? first + i : st[i];
      var r = runs[runs.length - 1];
      if (r && r.v === v) r.to = step; else runs.push({from: step, to: step, v: v});
    });
    var total = a.reduce(function (x, v) { return x + (num(v) || 0); }, 0);
    var shown = runs.slice(0, 40);
    return h('table', {cls: 'small survivors'}, [h('thead', {}, [h('tr', {}, [h('th', {text: 'born in step(s)'}), h('th', {text: 'still alive, per step'}), h('th', {text: 'in all'})])]),
      h('tbody', {}, shown.map(function (r) {
        return h('tr', {cls: r.v ? 'bad' : 'quiet'}, [h('td', {cls: 'num', text: r.from === r.to ? String(r.from) : r.from + '\u2013' + r.to}),
          h('td', {cls: 'num', text: str(r.v)}), h('td', {cls: 'num', text: String((num(r.v) || 0) * (r.to - r.from + 1))})]);
      }).concat(runs.length > shown.length ? [h('tr', {}, [h('td', {colspan: '3', text: '\u2026 ' + (runs.length - shown.length) + ' more runs'})])] : [])
        .concat([h('tr', {cls: 'total'}, [h('td', {text: 'total'}), h('td'), h('td', {cls: 'num', text: String(total)})])]))]);
  }
  function zero(host, z) {
    if (!z) return;
    var b = block(host, 'ZeRO model states and collectives (stage ' + str(z.zero_stage) + ', ' + str(z.world_size) + ' ranks, this rank)', 'zero');
    var ms = obj(z.model_states) || {}, meas = obj(ms.measured) || {}, exp = obj(ms.expected) || {}, unp = obj(ms.expected_unpadded) || {};
    var tr = obj(z.traffic), tol = num(z.tolerance);
    function ratio(r) {
      if (num(r) === null) return null;
      var off = tol !== null && Math.abs(r - 1) > tol;
      return h('span', {cls: off ? 'bad' : 'good', text: r.toFixed(3) + '\u00d7' + (tol !== null ? (off ? ' \u2014 outside' : ' \u2014 within') + ' \u00b1' + Math.round(tol * 100) + ' %' : '')});
    }
    var bpp = obj(z.bytes_per_parameter);
    b.appendChild(kv([
      ['Model states', h('span', {}, ['measured ' + bytes(meas.total) + ' vs expected ' + bytes(exp.total) + ' (paper formula, unpadded: ' + bytes(unp.total) + '): ', ratio(ms.ratio)])],
      ['Collectives', tr ? h('span', {}, [(tr.judged === false ? 'not judged; ' : '') + bytes(tr.ring_bytes_per_step) + '/step vs expected ' + bytes(tr.expected_ring_bytes_per_step) + '/step: ', ratio(tr.ratio)]) : ''],
      ['Counted as', tr ? str(tr.counted_as) : ''],
      ['Parameters', num(z.parameter_numel) !== null ? int(z.parameter_numel) + ' elements, ' + int(z.partitioned_numel) + ' after padding for partitioning' : ''],
      ['Bytes per parameter', bpp ? 'parameters ' + str(bpp.parameters) + ', gradients ' + str(bpp.gradients) + ', optimizer states ' + str(bpp.optimizer_states) : ''],
      ['Tensors at a boundary', num(z.tensor_bytes_at_boundary) !== null ? bytes(z.tensor_bytes_at_boundary) + (num(z.harness_tensor_bytes) !== null ? ' (harness\u2019 own: ' + bytes(z.harness_tensor_bytes) + ')' : '') : ''],
      ['Not judged', str(z.not_judged_reason)], ['Diagnoses', arr(z.diagnoses).map(str).join(', '), 'mono bad']]));
    arr(z.explanations).forEach(function (e) { b.appendChild(h('p', {cls: 'explanation'}, [rich(e)])); });
    var row = h('div', {cls: 'chart-row'}), parts = ['parameters', 'gradients', 'optimizer_states', 'total'];
    row.appendChild(Charts.bars({title: 'Model states on this rank' + (num(ms.ratio) !== null ? ': measured / expected = ' + ms.ratio.toFixed(3) + '\u00d7' : ''),
      width: 740, height: 290, y: {label: 'bytes', unit: 'bytes'}, groups: ['parameters', 'gradients', 'optimizer states', 'total'],
      series: [{name: 'measured', values: parts.map(function (k) { return meas[k]; }), color: '#0072b2'},
               {name: 'expected (padded)', values: parts.map(function (k) { return exp[k]; }), color: '#9ecae1'},
               {name: 'paper formula (unpadded)', values: parts.map(function (k) { return unp[k]; }), color: '#bdbdbd'}]}));
    if (tr) row.appendChild(Charts.bars({title: 'Collectives per step' + (num(tr.ratio) !== null ? ': ' + tr.ratio.toFixed(3) + '\u00d7' : ''), width: 360, height: 290, y: {label: 'bytes', unit: 'bytes'},
      groups: ['ring bytes / step'],
      series: [{name: 'measured', values: [tr.ring_bytes_per_step], color: '#0072b2'},
               {name: 'expected', values: [tr.expected_ring_bytes_per_step], color: '#9ecae1'}]}));
    b.appendChild(row);
  }

  // ---------- hashes ----------
  function openScenario(sc, scroll) {
    sc.section.hidden = false;
    sc.section.open = true;
    renderCharts(sc);
    if (scroll) sc.section.scrollIntoView();
  }
  function handleHash() {
    var hash = location.hash || '';
    if (hash === '#render-all') { renderAll(); return; }
    var m = /^#(scenario|only)=(.*)$/.exec(hash);
    document.body.classList.toggle('only-one', !!(m && m[1] === 'only'));
    state.scenarios.forEach(function (sc) { if (sc.section) sc.section.classList.remove('the-one'); });
    if (!m) return;
    var name = m[2];
    try { name = decodeURIComponent(name); } catch (e) { /* keep it raw */ }
    var sc = state.scenarios.filter(function (x) { return x.key === name; })[0];
    if (!sc) {
      if (state.status) state.status.setAttribute('data-scenario-opened', '');
      return;
    }
    sc.row.hidden = false;
    sc.section.classList.add('the-one');
    openScenario(sc, m[1] === 'scenario');
    if (m[1] === 'only') window.scrollTo(0, 0);
    if (state.status) state.status.setAttribute('data-scenario-opened', sc.key);
  }
  function renderAll() { state.scenarios.forEach(function (sc) { openScenario(sc, false); }); }

  // ---------- start ----------
  function main() {
    var root = document.getElementById('report') || document.body;
    state.status = document.getElementById('report-status');
    if (!state.status) { state.status = h('div', {id: 'report-status', hidden: 'hidden'}); document.body.appendChild(state.status); }
    var d = {};
    guard(root, 'the data', function () {
      var el = document.getElementById('report-data');
      d = obj(JSON.parse(el ? el.textContent : '{}')) || {};
    });
    state.data = d;
    var header = h('header', {}, [h('h1', {text: document.title || 'trainrepro report'}),
      h('p', {cls: 'sub', text: (str(d.generated_at) ? 'generated ' + str(d.generated_at) : '') + (str(d.trainrepro_version) ? ' by trainrepro ' + str(d.trainrepro_version) : '')})]);
    root.appendChild(header);
    state.scenarios = arr(d.scenarios).map(function (s, i) {
      s = obj(s) || {};
      var g = obj(s.gradients), m = obj(s.memory);
      return {s: s, index: i, key: keyOf(s, i), outcome: outcomeOf(s),
              hasSamples: !!((m && arr(m.steps).length) || (g && arr(g.steps).length))};
    });
    guard(root, 'the summary', function () { summary(root); });
    if (!state.counts) { state.counts = {}; OUTCOMES.forEach(function (o) { state.counts[o] = 0; }); }
    guard(root, 'the performance history', function () { performanceHistory(root); });
    guard(root, 'the engine matrix', function () { engineMatrix(root); });
    guard(root, 'the table', function () { table(root); });
    var list = h('section', {id: 'details'}, [h('h2', {text: 'Scenario details'}),
      h('p', {cls: 'hint', text: 'Click a scenario to open it; charts are drawn when it opens. Failed, not-reproduced and error scenarios are open already.'})]);
    root.appendChild(list);
    var ordered = state.scenarios.slice().sort(function (a, b) { return SEVERITY[a.outcome] - SEVERITY[b.outcome] || a.index - b.index; });
    ordered.forEach(function (sc) { guard(list, 'scenario ' + sc.key, function () { section(list, sc); }); });
    applyFilter();
    // failed, not-reproduced and error scenarios (exit 1 or more) start open; their charts are
    // drawn as they come into view
    var io = 'IntersectionObserver' in window ? new IntersectionObserver(function (entries) {
      entries.forEach(function (e) {
        if (!e.isIntersecting) return;
        io.unobserve(e.target);
        var sc = state.scenarios[+e.target.getAttribute('data-index')];
        if (sc) renderCharts(sc);
      });
    }, {rootMargin: '800px'}) : null;
    state.scenarios.forEach(function (sc) {
      if (!sc.section || (sc.outcome !== 'failed' && sc.outcome !== 'error' && sc.outcome !== 'not-reproduced')) return;
      sc.deferred = true;
      sc.section.open = true;
      sc.chartHost.setAttribute('data-index', String(sc.index));
      if (io) io.observe(sc.chartHost); else renderCharts(sc);
    });
    window.addEventListener('hashchange', handleHash);
    window.addEventListener('beforeprint', renderAll);
    handleHash();
    state.done = true;
    updateStatus();
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', function () { guard(null, 'the page', main); });
  else guard(null, 'the page', main);
})();
