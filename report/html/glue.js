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

  // Sizes and times as memscope prints them: memscopeUnits (units.js,
  // inlined before this file).
  var fmtBytes = memscopeUnits.bytes;
  function fmtMs(ms) { return memscopeUnits.duration(Number(ms) * 1000); }
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

  // Round ticks in binary units. ECharts steps by 1, 2 or 5 times a power
  // of ten bytes, which prints as 477 MiB, 954 MiB, 1.4 GiB; an axis of
  // bytes instead starts at zero and steps by the smallest of 1, 2, 4 or 5
  // times a power of ten of KiB, MiB or GiB (or a quarter or a half of one)
  // that needs at most maxTicks steps and prints every tick exactly:
  // 0, 512 MiB, 1 GiB, 1.5 GiB.
  var unitSizes = [1, 1024, Math.pow(1024, 2), Math.pow(1024, 3), Math.pow(1024, 4)];
  var stepSizes = [];
  unitSizes.forEach(function (u) {
    (u > 1 ? [0.25, 0.5] : []).concat([1, 2, 4, 5, 10, 20, 25, 50, 100, 200, 250, 500]).forEach(function (m) {
      stepSizes.push(m * u);
    });
  });
  function exact(v) {
    var m = /^-?([0-9.]+) (\S+)$/.exec(fmtAxisBytes(v));
    if (!m) return false;
    var u = unitSizes[["B", "KiB", "MiB", "GiB", "TiB"].indexOf(m[2])];
    return u !== undefined && Math.abs(Number(m[1]) * u - Math.abs(v)) < 1e-6 * Math.abs(v);
  }
  function binaryStep(lo, hi, maxTicks) {
    for (var i = 0; i < stepSizes.length; i++) {
      var s = stepSizes[i], a = Math.floor(lo / s), b = Math.ceil(hi / s), ok = b - a <= maxTicks;
      for (var k = a; ok && k <= b; k++) ok = k === 0 || exact(k * s);
      if (ok) return s;
    }
    return 0;
  }
  var maxTicks = 5;
  function bytesAxis(a) {
    axes(a).forEach(function (x) {
      if (x.type !== "value") return;
      x.axisLabel = x.axisLabel || {};
      x.axisLabel.formatter = fmtAxisBytes;
      // The range's ends are chosen for the data shown (the zoom changes
      // it); roundAxes then sets the step they were chosen for.
      var st = x.memscopeStep = { step: 0, applied: 0 };
      var fixedMax = typeof x.max === "number" ? x.max : null;
      x.min = function (v) {
        var lo = Math.min(0, v.min), hi = fixedMax !== null ? fixedMax : Math.max(0, v.max);
        st.step = binaryStep(lo, hi, maxTicks);
        return st.step ? Math.floor(lo / st.step) * st.step : lo;
      };
      x.max = function (v) {
        var hi = fixedMax !== null ? fixedMax : Math.max(0, v.max);
        return st.step ? Math.ceil(hi / st.step) * st.step : hi;
      };
    });
  }
  // roundAxes gives each bytes axis of chart c the step its range was
  // chosen for, again after a zoom.
  function roundAxes(c, opt) {
    ["xAxis", "yAxis"].forEach(function (dim) {
      var list = axes(opt[dim]), update = [], changed = false;
      list.forEach(function (x) {
        var st = x.memscopeStep, u = {};
        if (st && st.step && st.step !== st.applied) {
          st.applied = st.step;
          u.interval = st.step;
          changed = true;
        }
        update.push(u);
      });
      if (changed) {
        var o = {};
        o[dim] = update;
        c.setOption(o);
      }
    });
  }

  // readableAxes keeps every axis's text inside the chart and apart: tick
  // labels that would overlap are left out, and a y axis's name above it
  // runs inwards from the axis, not past the chart's edge.
  function readableAxes(opt) {
    ["xAxis", "yAxis"].forEach(function (dim) {
      axes(opt[dim]).forEach(function (x, i) {
        x.axisLabel = x.axisLabel || {};
        x.axisLabel.hideOverlap = true;
        if (dim === "yAxis" && x.name && !x.nameLocation) {
          x.nameTextStyle = x.nameTextStyle || {};
          x.nameTextStyle.align = i === 0 ? "left" : "right";
        }
      });
    });
  }

  // Phase labels: a band is labelled only where its label fits inside it
  // and clear of the previous label, again after each zoom.
  var measure = document.createElement("canvas").getContext("2d");
  function fitBandLabels(c, opt) {
    var idx = -1;
    (opt.series || []).forEach(function (s, i) { if (s.markArea && s.markArea.data && s.markArea.data.length) idx = i; });
    if (idx < 0) return;
    var data = opt.series[idx].markArea.data;
    var font = (opt.series[idx].markArea.label || {}).fontSize || 12;
    measure.font = font + "px sans-serif";
    var grid = c.getModel().getComponent("grid", 0).coordinateSystem.getRect();
    var lastEnd = -Infinity, changed = false;
    data.forEach(function (d) {
      var x0 = c.convertToPixel({ xAxisIndex: 0 }, d[0].xAxis), x1 = c.convertToPixel({ xAxisIndex: 0 }, d[1].xAxis);
      var lo = Math.max(x0, grid.x), hi = Math.min(x1, grid.x + grid.width);
      var w = measure.measureText(d[0].name || "").width, mid = (lo + hi) / 2;
      var show = hi - lo >= w + 6 && mid - w / 2 >= lastEnd + 6;
      if (show) lastEnd = mid + w / 2;
      if (!d[0].label || d[0].label.show !== show) {
        d[0].label = { show: show };
        changed = true;
      }
    });
    if (changed) {
      var update = opt.series.map(function () { return {}; });
      update[idx] = { markArea: { data: data } };
      c.setOption({ series: update });
    }
  }

  // Text that overlaps other text or leaves the chart, as drawn: every
  // label, axis tick and legend entry of chart c, for #memscope-status.
  function textProblems(c, id) {
    var w = c.getWidth(), h = c.getHeight(), rects = [], out = [];
    c.getZr().storage.getDisplayList(true).forEach(function (el) {
      if (el.type !== "tspan" && el.type !== "text") return;
      var t = el.style && el.style.text;
      if (!t || el.invisible || el.ignore || el.style.opacity === 0) return;
      var r = el.getBoundingRect().clone();
      if (r.width === 0 || r.height === 0) return;
      if (el.transform) r.applyTransform(el.transform);
      // What a clip path hides (a scrolling legend's other pages) is not
      // drawn: keep the part inside every clip.
      var clips = el.__clipPaths || [];
      for (var i = 0; i < clips.length; i++) {
        var k = clips[i].getBoundingRect().clone();
        if (clips[i].transform) k.applyTransform(clips[i].transform);
        var x0 = Math.max(r.x, k.x), y0 = Math.max(r.y, k.y);
        var x1 = Math.min(r.x + r.width, k.x + k.width), y1 = Math.min(r.y + r.height, k.y + k.height);
        if (x1 - x0 <= 1 || y1 - y0 <= 1) return;
        r.x = x0; r.y = y0; r.width = x1 - x0; r.height = y1 - y0;
      }
      if (r.x < -1 || r.y < -1 || r.x + r.width > w + 1 || r.y + r.height > h + 1) out.push(id + ": " + JSON.stringify(String(t)) + " is clipped");
      rects.forEach(function (o) {
        var dx = Math.min(r.x + r.width, o.r.x + o.r.width) - Math.max(r.x, o.r.x);
        var dy = Math.min(r.y + r.height, o.r.y + o.r.height) - Math.max(r.y, o.r.y);
        if (dx > 1 && dy > 1) out.push(id + ": " + JSON.stringify(String(t)) + " overlaps " + JSON.stringify(o.t));
      });
      rects.push({ r: r, t: String(t) });
    });
    return out;
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
    // A legend in a column beside the plot (the sites') is as wide as the
    // room the grid leaves it: longer names end in "…", the tooltip has them whole.
    axes(opt.legend).forEach(function (l) {
      if (l.orient !== "vertical") return;
      var room = Number(axes(opt.grid)[0] && axes(opt.grid)[0].right) || 0;
      l.textStyle = l.textStyle || {};
      l.textStyle.width = Math.max(80, room - 60);
      l.textStyle.overflow = "truncate";
      l.tooltip = { show: true };
    });
    axes(opt.xAxis).forEach(function (x) {
      x.axisLabel = x.axisLabel || {};
      x.axisLabel.formatter = function (v) { return unit === "ms" ? fmtMs(v) : String(v); };
    });
    opt.tooltip.formatter = function (ps) {
      if (!ps.length) return "";
      // Rows are [bytes…, x, event].
      var row = ps[0].value, x = row[row.length - 2], out = fmtX(unit, x) + " · event " + row[row.length - 1], sum = 0;
      // The phase there, whose band may be too narrow for its label.
      (opt.series || []).forEach(function (s) {
        ((s.markArea && s.markArea.data) || []).forEach(function (d) {
          if (d[0].name && x >= d[0].xAxis && x < d[1].xAxis) out += " · " + esc(d[0].name);
        });
      });
      ps.forEach(function (p) {
        var v = p.value[p.encode.y[0]];
        sum += v;
        out += "<br>" + p.marker + esc(p.seriesName) + ": <b>" + fmtBytes(v) + "</b>";
      });
      if (stacked && ps.length > 1) out += "<br>total shown: <b>" + fmtBytes(sum) + "</b>";
      return out;
    };
  }

  var charts = [], groups = {}, empty = [], drawn = [];
  var els = document.querySelectorAll(".chart[data-kind]");
  if (typeof echarts === "undefined") {
    var msg = "The charts could not be drawn: the ECharts library did not load.";
    errors.push("echarts is not defined");
    var box = document.getElementById("memscope-load-error");
    box.textContent = msg;
    box.hidden = false;
  } else {
    els.forEach(function (el) {
      try {
        var opt = JSON.parse(document.getElementById(el.id + "-option").textContent);
        (decorate[el.dataset.kind] || function () {})(opt, el);
        readableAxes(opt);
        // Draw at once; keep the animation of zooms and drills.
        opt.animationDuration = 0;
        var c = echarts.init(el, null, { renderer: "canvas" });
        c.setOption(opt);
        roundAxes(c, opt);
        fitBandLabels(c, opt);
        c.on("datazoom", function () { roundAxes(c, opt); fitBandLabels(c, opt); });
        drawn.push({ c: c, id: el.id, opt: opt });
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
      resize = setTimeout(function () {
        drawn.forEach(function (d) { d.c.resize(); fitBandLabels(d.c, d.opt); });
      }, 100);
    });
  }

  function verdict() {
    status.dataset.charts = String(els.length);
    status.dataset.initialised = String(charts.length);
    status.dataset.empty = empty.join(" ");
    status.dataset.errors = JSON.stringify(errors);
    status.dataset.renderMs = String(Math.round(renderMs));
    var text = [];
    // The ticks of every axis of bytes, as drawn, by "chart axis".
    var ticks = {};
    drawn.forEach(function (d) {
      ["xAxis", "yAxis"].forEach(function (dim) {
        axes(d.opt[dim]).forEach(function (x, i) {
          if (!x.memscopeStep) return;
          try {
            ticks[d.id + " " + dim + i] = d.c.getModel().getComponent(dim, i).axis.scale.getTicks().map(function (t) {
              return typeof t === "object" ? t.value : t;
            });
          } catch (e) {
            text.push(d.id + ": cannot read the ticks of " + dim + i + ": " + e);
          }
        });
      });
    });
    status.dataset.ticks = JSON.stringify(ticks);
    drawn.forEach(function (d) {
      try {
        text = text.concat(textProblems(d.c, d.id));
      } catch (e) {
        text.push(d.id + ": cannot check its text: " + e);
      }
    });
    status.dataset.text = JSON.stringify(text.slice(0, 40));
    status.textContent = errors.length === 0 && empty.length === 0 && charts.length === els.length ? "ok" : "failed";
  }
  var renderMs = performance.now() - started;
  verdict();
  // Errors can still come from the first frames drawn: look again.
  setTimeout(verdict, 1000);
})();
