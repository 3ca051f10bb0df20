// Charts (uPlot): <div data-chart='{"title":…,"days":[unix…],"series":[{"label":…,"values":[…]}],"stacked":true}'>.
// Stacked series are drawn as cumulative bands, the top band first.
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";

const started = new WeakSet();
const palette = ["#3b82f6", "#f59e0b", "#10b981", "#ef4444", "#8b5cf6", "#14b8a6", "#ec4899", "#64748b"];

export function startCharts(root) {
  root.querySelectorAll("[data-chart]").forEach((el) => {
    if (started.has(el)) return;
    started.add(el);
    let spec;
    try { spec = JSON.parse(el.dataset.chart); } catch (_) { return; }
    const xs = spec.days || [];
    let series = spec.series || [];
    let data = series.map((s) => s.values);
    if (spec.stacked) {
      const acc = xs.map(() => 0);
      data = series.map((s) => s.values.map((v, i) => (acc[i] += v || 0)));
      series = series.slice().reverse();
      data = data.slice().reverse();
    }
    const opts = {
      title: spec.title || "",
      width: Math.max(240, el.clientWidth || 640),
      height: spec.height || 260,
      series: [{}].concat(series.map((s, i) => ({
        label: s.label,
        stroke: palette[i % palette.length],
        fill: palette[i % palette.length] + "99",
        paths: uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 60] }) : undefined,
        points: { show: false },
      }))),
      // Half a day of room at each end, so the first and last days' bars show whole.
      scales: { x: { time: true, range: (u, min, max) => [min - 43200, max + 43200] } },
      axes: [{}, { label: spec.unit || "" }],
    };
    el.chart = new uPlot(opts, [xs].concat(data), el);
    el.setAttribute("data-chart-rendered", "true");
    // Follow the element's width (window resize, phone rotation).
    if (window.ResizeObserver) {
      new ResizeObserver(() => {
        const w = Math.max(240, el.clientWidth);
        if (w !== el.chart.width) el.chart.setSize({ width: w, height: opts.height });
      }).observe(el);
    }
  });
}
