// A small SVG chart: stacked bars of the status mix per interval, and a line of pages per second,
// on the scales the server gives (nice ceilings of closed intervals: they hold from one refresh to the next).
"use strict";
const STATUS_CLASSES = [
  ["2xx", "#2e8540", (s) => s[0] === "2"],
  ["3xx", "#1f5fa8", (s) => s[0] === "3"],
  ["429", "#c0392b", (s) => s === "429"],
  ["4xx", "#c76b00", (s) => s[0] === "4" && s !== "429"],
  ["5xx", "#7d3c98", (s) => s[0] === "5"],
];

function svgElement(name, attributes) {
  const element = document.createElementNS("http://www.w3.org/2000/svg", name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

function drawChart(svg, legend, series) {
  const points = series.points;
  const width = 900, height = 200, top = 14, bottom = 18;
  svg.replaceChildren();
  const classes = points.map((p) => {
    const counts = STATUS_CLASSES.map(() => 0);
    for (const [status, n] of Object.entries(p.statuses)) {
      const index = STATUS_CLASSES.findIndex(([, , match]) => match(status));
      if (index >= 0) counts[index] += n;
    }
    return counts;
  });
  const maxBar = series.scale.responses, maxRate = series.scale.pages_per_second;
  const slot = width / Math.max(1, points.length);
  const plot = height - top - bottom;
  classes.forEach((counts, i) => {
    let y = height - bottom;
    counts.forEach((n, k) => {
      if (!n) return;
      const h = (n / maxBar) * plot;
      y -= h;
      svg.appendChild(svgElement("rect", { x: i * slot + 1, y, width: Math.max(1, slot - 2), height: h, fill: STATUS_CLASSES[k][1], opacity: 0.45 }));
    });
  });
  const line = points.map((p, i) => `${(i + 0.5) * slot},${height - bottom - (p.pages_per_second / maxRate) * plot}`).join(" ");
  if (points.length) svg.appendChild(svgElement("polyline", { points: line, fill: "none", stroke: "#243447", "stroke-width": 2 }));
  const label = svgElement("text", { x: 4, y: 11, "font-size": 11, fill: "#6b7480", class: "scale" });
  label.textContent = `top: ${maxRate} pages/s · ${maxBar} responses per ${series.step} s`;
  svg.appendChild(label);
  legend.replaceChildren(...STATUS_CLASSES.map(([name, color]) => {
    const item = document.createElement("span");
    const swatch = document.createElement("i");
    swatch.style.background = color; // through the CSSOM: the page's CSP refuses style attributes in markup
    item.append(swatch, name);
    return item;
  }), Object.assign(document.createElement("span"), { textContent: "— pages/s" }));
}
