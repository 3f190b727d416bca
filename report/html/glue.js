// memscope: initialise the report's charts. Every chart is a <div
// class="chart"> followed by its ECharts option as JSON (built in Go with
// go-echarts); data-kind picks the formatters added here (functions cannot
// travel in JSON). At the end the glue writes a verdict into
// #memscope-status: how many charts were initialised, which had no data,
// and every error seen, for the browser test and for anyone debugging.
"use strict";
(function () {
  var started = performance.now();
  var status = document.getElementById("memscope-status");
  var errors = window.memscopeErrors || [];

  // Binary units as memscope prints them: whole bytes below 1 KiB, else
  // two decimals in the largest unit below 1024.
  function fmtBytes(n) {
    n = Number(n);
    var neg = n < 0, u = Math.abs(n);
    if (u < 1024) return (neg ? "-" : "") + Math.round(u) + " B";
    var units = ["KiB", "MiB", "GiB", "TiB"], k = 0, v = u / 1024;
    while (Math.round(v * 100) >= 1024 * 100 && k < units.length - 1) { v /= 1024; k++; }
    return (neg ? "-" : "") + v.toFixed(2) + " " + units[k];
  }
  // Three significant digits of a time given in ms.
  function fmtMs(ms) {
    var us = Math.abs(Number(ms) * 1000), s = ms < 0 ? "-" : "";
    if (us < 1000) return s + Math.round(us) + " µs";
    var v = us / 1000, unit = " ms";
    if (v >= 999.5) { v /= 1000; unit = " s"; }
    if (v >= 1000) return s + Math.round(v) + unit;
    return s + v.toPrecision(3) + unit;
  }
  // Axis labels: three significant digits are enough.
  function fmtAxisBytes(n) {
    var s = fmtBytes(n), m = /^(-?)([0-9.]+) (\S+)$/.exec(s);
    if (!m || m[3] === "B") return s;
    var v = Number(m[2]), t = v >= 100 ? String(Math.round(v)) : v.toPrecision(3);
    if (t.indexOf(".") >= 0) t = t.replace(/0+$/, "").replace(/\.$/, "");
    return m[1] + t + " " + m[3];
  }
  function fmtX(unit, x) { return unit === "ms" ? "+" + fmtMs(x) : "event " + x; }
  function esc(s) {
    return String(s).replace(/[&<>"]/g, function (c) {
      return { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" }[c];
    });
  }
  function axes(a) { return a === undefined ? [] : (Array.isArray(a) ? a : [a]); }
  function bytesAxis(a) {
    axes(a).forEach(function (x) {
      if (x.type === "value") { x.axisLabel = x.axisLabel || {}; x.axisLabel.formatter = fmtAxisBytes; }
    });
  }

  // Formatters per kind of chart.
  var decorate = {
    timeline: function (opt, el) { series(opt, el, false); },
    stack: function (opt, el) { series(opt, el, true); },
    bars: function (opt) {
      bytesAxis(opt.yAxis);
      opt.tooltip.formatter = function (ps) {
        var out = esc(ps[0].axisValueLabel);
        ps.forEach(function (p) {
          out += "<br>" + p.marker + esc(p.seriesName) + ": <b>" + fmtBytes(p.value) + "</b>" +
            (p.name && p.name !== p.axisValueLabel ? " in " + esc(p.name) : "");
        });
        return out;
      };
    },
    sweep: function (opt) {
      var y = axes(opt.yAxis);
      bytesAxis(y[0]);
      if (y[1]) { y[1].axisLabel = { formatter: function (v) { return v + " ms"; } }; }
      opt.tooltip.formatter = function (p) {
        var v = p.value[1], onTime = p.seriesName.indexOf("step time") >= 0;
        return p.marker + esc(p.seriesName) + "<br>batch " + p.value[0] + ": <b>" +
          (onTime ? v.toFixed(1) + " ms" : fmtBytes(v)) + "</b>";
      };
    },
    hbars: function (opt) {
      bytesAxis(opt.xAxis);
      opt.tooltip.valueFormatter = fmtBytes;
    },
    tree: function (opt) {
      opt.tooltip.formatter = function (p) {
        var path = p.treePathInfo || [], total = path.length ? path[0].value : 0;
        var share = total ? " · " + (100 * p.value / total).toFixed(1) + "% of the peak" : "";
        return "<b>" + esc(p.name) + "</b><br>" + esc((p.data && p.data.path) || "") + "<br>" +
          fmtBytes(p.value) + share + (p.data && p.data.blocks ? " · " + p.data.blocks + " blocks" : "");
      };
      opt.series.forEach(function (s) {
        s.label = { show: true, position: "insideTopLeft", fontSize: 12, lineHeight: 16, overflow: "truncate",
          formatter: function (p) { return p.name + "\n" + fmtBytes(p.value); } };
        s.upperLabel = { show: true, height: 20, formatter: function (p) { return p.name + "  " + fmtBytes(p.value); } };
      });
    },
  };
  function series(opt, el, stacked) {
    var unit = el.dataset.x;
    bytesAxis(opt.yAxis);
    axes(opt.xAxis).forEach(function (x) {
      x.axisLabel = x.axisLabel || {};
      x.axisLabel.formatter = function (v) { return unit === "ms" ? fmtMs(v) : String(v); };
    });
    opt.tooltip.formatter = function (ps) {
      if (!ps.length) return "";
      // Rows are [bytes…, x, event].
      var row = ps[0].value, out = fmtX(unit, row[row.length - 2]) + " · event " + row[row.length - 1], sum = 0;
      ps.forEach(function (p) {
        var v = p.value[p.encode.y[0]];
        sum += v;
        out += "<br>" + p.marker + esc(p.seriesName) + ": <b>" + fmtBytes(v) + "</b>";
      });
      if (stacked && ps.length > 1) out += "<br>total shown: <b>" + fmtBytes(sum) + "</b>";
      return out;
    };
  }

  var charts = [], groups = {}, empty = [];
  var els = document.querySelectorAll(".chart[data-kind]");
  if (typeof echarts === "undefined") {
    var msg = "The charts could not be drawn: the ECharts library did not load" +
      (document.querySelector("script[src][data-echarts]") ? " (no network?)." : ".");
    errors.push("echarts is not defined");
    var box = document.getElementById("memscope-load-error");
    box.textContent = msg;
    box.hidden = false;
  } else {
    els.forEach(function (el) {
      try {
        var opt = JSON.parse(document.getElementById(el.id + "-option").textContent);
        (decorate[el.dataset.kind] || function () {})(opt, el);
        // Draw at once; keep the animation of zooms and drills.
        opt.animationDuration = 0;
        var c = echarts.init(el, null, { renderer: "canvas" });
        c.setOption(opt);
        if (el.dataset.group) {
          c.group = el.dataset.group;
          groups[el.dataset.group] = true;
        }
        charts.push(c);
        var n = 0;
        c.getModel().getSeries().forEach(function (s) { n += s.getData().count(); });
        if (n === 0) empty.push(el.id);
      } catch (e) {
        errors.push(el.id + ": " + e);
      }
    });
    Object.keys(groups).forEach(function (g) { echarts.connect(g); });
    var resize;
    window.addEventListener("resize", function () {
      clearTimeout(resize);
      resize = setTimeout(function () { charts.forEach(function (c) { c.resize(); }); }, 100);
    });
  }

  function verdict() {
    status.dataset.charts = String(els.length);
    status.dataset.initialised = String(charts.length);
    status.dataset.empty = empty.join(" ");
    status.dataset.errors = JSON.stringify(errors);
    status.dataset.renderMs = String(Math.round(renderMs));
    status.textContent = errors.length === 0 && empty.length === 0 && charts.length === els.length ? "ok" : "failed";
  }
  var renderMs = performance.now() - started;
  verdict();
  // Errors can still come from the first frames drawn: look again.
  setTimeout(verdict, 1000);
})();
