// The NOC's running timers count on in the page (console/noc_timers.py renders them; without
// JavaScript the page shows the values of its rendering). Seconds since the page loaded are added to
// each running timer's data-elapsed-s.
(function () {
  "use strict";
  var loaded = Date.now();
  function two(n) { return (n < 10 ? "0" : "") + n; }
  function tick() {
    var spent = Math.floor((Date.now() - loaded) / 1000);
    document.querySelectorAll("[data-elapsed-s]").forEach(function (el) {
      var s = parseInt(el.getAttribute("data-elapsed-s"), 10) + spent;
      el.textContent = Math.floor(s / 3600) + ":" + two(Math.floor(s % 3600 / 60)) + ":" + two(s % 60);
    });
  }
  setInterval(tick, 1000);
}());
