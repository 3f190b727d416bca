// memscope: collect every error from here on (a library that fails to
// load, a script error, console.error) so that the glue can show them and
// the browser test can read them from #memscope-status.
"use strict";
window.memscopeErrors = [];
window.addEventListener("error", function (e) {
  var t = e.target;
  if (t && t !== window && (t.src || t.href)) {
    window.memscopeErrors.push("could not load " + (t.src || t.href));
  } else {
    window.memscopeErrors.push(String(e.message || e.error || "script error"));
  }
}, true);
window.addEventListener("unhandledrejection", function (e) {
  window.memscopeErrors.push("unhandled rejection: " + String(e.reason));
});
(function () {
  var orig = console.error;
  console.error = function () {
    window.memscopeErrors.push(Array.prototype.join.call(arguments, " "));
    return orig.apply(console, arguments);
  };
})();
