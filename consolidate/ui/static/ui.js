// consolidate ui: the page's own script (no library, no network). Asks before a form marked
// data-confirm posts, and draws the overview's two charts from the JSON in #overview-data.
"use strict";

document.querySelectorAll("form[data-confirm]").forEach(function (form) {
  form.addEventListener("submit", function (event) {
    if (!window.confirm(form.dataset.confirm)) { event.preventDefault(); }
  });
});

var COLORS = { active: "#1e7a3c", quarantined: "#c98a00", disputed: "#b3261e", archived: "#7a8294",
               notes: "#2457c5", kept: "#1e7a3c", dropped: "#b3261e" };

function axes(ctx, w, h, pad, max) {
  ctx.strokeStyle = "#d9dde5"; ctx.fillStyle = "#6b7385"; ctx.font = "11px sans-serif";
  for (var i = 0; i <= 4; i++) {
    var y = h - pad - (h - 2 * pad) * i / 4;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w - 10, y); ctx.stroke();
    ctx.fillText(String(Math.round(max * i / 4)), 4, y + 4);
  }
}

function legend(ctx, names, x, y) {
  names.forEach(function (name, i) {
    ctx.fillStyle = COLORS[name] || "#333"; ctx.fillRect(x + i * 110, y - 9, 10, 10);
    ctx.fillStyle = "#1d2330"; ctx.fillText(name, x + i * 110 + 14, y);
  });
}

function drawStatus(canvas, data) {
  var ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 34;
  var points = data.points, series = data.series, max = 1;
  points.forEach(function (p) { series.forEach(function (s) { max = Math.max(max, p.counts[s]); }); });
  axes(ctx, w, h, pad, max);
  var step = points.length > 1 ? (w - pad - 20) / (points.length - 1) : 0;
  series.forEach(function (s) {
    ctx.strokeStyle = COLORS[s] || "#333"; ctx.lineWidth = 2; ctx.beginPath();
    points.forEach(function (p, i) {
      var x = pad + i * step, y = h - pad - (h - 2 * pad) * p.counts[s] / max;
      if (i === 0) { ctx.moveTo(x, y); } else { ctx.lineTo(x, y); }
      if (points.length === 1) { ctx.arc(x, y, 3, 0, 2 * Math.PI); }
    });
    ctx.stroke();
  });
  ctx.lineWidth = 1; legend(ctx, series, pad, 14);
  canvas.dataset.drawn = String(points.length);
}

function drawRuns(canvas, data) {
  var ctx = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 34;
  var runs = data.runs.slice(-40), names = ["notes", "kept", "dropped"], max = 1;
  runs.forEach(function (r) { max = Math.max(max, r.notes); });
  axes(ctx, w, h, pad, max);
  var slot = (w - pad - 20) / Math.max(runs.length, 1), bar = Math.max(2, slot / 4);
  runs.forEach(function (r, i) {
    names.forEach(function (n, j) {
      var v = r[n] || 0, bh = (h - 2 * pad) * v / max;
      ctx.fillStyle = COLORS[n]; ctx.fillRect(pad + i * slot + j * bar + 2, h - pad - bh, bar - 1, bh);
    });
  });
  legend(ctx, names, pad, 14);
  canvas.dataset.drawn = String(runs.length);
}

(function () {
  var blob = document.getElementById("overview-data");
  if (!blob) { return; }
  var data = JSON.parse(blob.textContent);
  var byStatus = document.getElementById("chart-status"), perRun = document.getElementById("chart-runs");
  if (byStatus) { drawStatus(byStatus, data); }
  if (perRun) { drawRuns(perRun, data); }
})();
