// A metric's page: every .chart element is drawn by Plotly from the figure in the json_script
// element whose id is the chart's name (chart-<name> → <name>); the figure is a JSON string.
// plotly.js (1 MB compressed) is fetched only once the page has rendered: its script element is
// added after the load event (the table and text are on screen by then), from the URL in this
// script's data-plotly attribute (a same-origin static file: the Content-Security-Policy allows it).
// Until a chart is drawn its box says so; if plotly.js cannot be had, the box says that instead.
(function () {
  "use strict";
  const charts = Array.from(document.querySelectorAll(".chart"));
  const source = document.currentScript && document.currentScript.dataset.plotly;
  if (!charts.length || !source) { return; }

  const say = (text) => charts.forEach(element => {
    const note = element.querySelector(".chart-status");
    if (note) { note.textContent = text; }
  });

  const scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  // The page's colours (static/capbench.css: --fg, --line on :root, light or dark by
  // prefers-color-scheme) over the figure's own light ones (leaderboards/charts.py), on a clear
  // background that shows the .chart box's; again when the visitor's scheme changes.
  const colours = () => {
    const style = getComputedStyle(document.documentElement);
    const fg = style.getPropertyValue("--fg").trim() || "#1d2330";
    const line = style.getPropertyValue("--line").trim() || "#e5e7eb";
    const dark = scheme !== null && scheme.matches;
    return {
      "paper_bgcolor": "rgba(0,0,0,0)", "plot_bgcolor": "rgba(0,0,0,0)", "font.color": fg,
      "xaxis.gridcolor": line, "yaxis.gridcolor": line, "xaxis.zerolinecolor": line, "yaxis.zerolinecolor": line,
      // the figure's own colours (charts.py LAYOUT's colorway), a step lighter on a dark page
      "colorway": dark ? ["#60a5fa", "#fbbf24", "#34d399", "#f87171"] : ["#2563eb", "#f59e0b", "#10b981", "#ef4444"],
    };
  };
  if (scheme && scheme.addEventListener) {
    scheme.addEventListener("change", () => charts.forEach(element => {
      if (element.classList.contains("js-plotly-plot")) { window.Plotly.relayout(element, colours()); }
    }));
  }

  const draw = () => {
    charts.forEach(element => {
      const data = document.getElementById(element.id.replace("chart-", ""));
      if (!data) { return; }
      const figure = JSON.parse(JSON.parse(data.textContent));
      const note = element.querySelector(".chart-status");
      if (note) { note.remove(); }
      // The title as text above the plot: it wraps on a phone, where Plotly would cut it off.
      const title = figure.layout.title && figure.layout.title.text;
      const heading = document.createElement("p");
      if (title) {
        heading.className = "chart-title";
        heading.id = element.id + "-title";
        heading.textContent = title;
        element.setAttribute("role", "figure");
        element.setAttribute("aria-labelledby", heading.id);
        delete figure.layout.title;
        figure.layout.margin = Object.assign({}, figure.layout.margin, {t: 16});
      }
      element.removeAttribute("aria-busy");
      window.Plotly.newPlot(element, figure.data, figure.layout, {responsive: true, displaylogo: false})
        .then(() => window.Plotly.relayout(element, colours()))
        .then(() => { if (title) { element.prepend(heading); } });
    });
  };

  const load = () => {
    const script = document.createElement("script");
    script.src = source;
    script.addEventListener("load", draw);
    script.addEventListener("error", () => say("The chart could not be loaded (plotly.js did not arrive)."));
    document.head.appendChild(script);
  };

  if (document.readyState === "complete") {
    window.setTimeout(load, 0);
  } else {
    window.addEventListener("load", () => window.setTimeout(load, 0), {once: true});
  }
})();
