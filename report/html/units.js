// memscope's units in a page, as the command line prints them
// (internal/units): sizes in binary units, whole bytes below 1 KiB, else
// exactly two decimals in the largest unit whose rounded value stays
// below 1024 ("1.00 KiB", "37.20 MiB"); times with three significant
// digits ("850 µs", "1.23 ms", "456 ms", "4.56 s"), whole seconds from
// 1000 s on. Rounded half away from zero in integers (BigInt), so a page
// prints what the text output prints, to the digit. The report's pages
// inline this file before their glue; memscope serve serves it as
// /units.js to its page.
"use strict";
var memscopeUnits = (function () {
  var sizeUnits = ["B", "KiB", "MiB", "GiB", "TiB"];
  function int(n) {
    return typeof n === "bigint" ? n : BigInt(Math.round(Number(n)));
  }
  // u × mul / div rounded half up (mul < div).
  function roundDiv(u, mul, div) {
    var p = u * mul, q = p / div, r = p % div;
    return r >= div - r ? q + 1n : q;
  }
  function two(v) {
    return v < 10n ? "0" + v : String(v);
  }
  function fixed(r, dec) {
    if (dec === 0) return String(r);
    if (dec === 1) return r / 10n + "." + (r % 10n);
    return r / 100n + "." + two(r % 100n);
  }
  function bytes(n) {
    var v = int(n), neg = v < 0n, u = neg ? -v : v, s = neg ? "-" : "";
    if (u < 1024n) return s + u + " B";
    var k = 1, h = roundDiv(u, 100n, 1024n);
    while (h >= 102400n && k < sizeUnits.length - 1) {
      k++;
      h = roundDiv(u, 100n, 1n << BigInt(10 * k));
    }
    return s + fixed(h, 2) + " " + sizeUnits[k];
  }
  function duration(us) {
    var v = int(us), neg = v < 0n, u = neg ? -v : v, s = neg ? "-" : "";
    if (u < 1000n) return s + u + " µs";
    var units = [["ms", 1000n], ["s", 1000000n]];
    for (var i = 0; i < units.length; i++) {
      for (var dec = 2, scale = 100n; dec >= 0; dec--, scale /= 10n) {
        var r = roundDiv(u, scale, units[i][1]);
        if (r < 1000n || (units[i][0] === "s" && dec === 0)) return s + fixed(r, dec) + " " + units[i][0];
      }
    }
    return s + u + " µs";
  }
  return { bytes: bytes, duration: duration };
})();
