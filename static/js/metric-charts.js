// A metric's page: every .chart element is drawn by Plotly from the figure in the json_script
// element whose id is the chart's name (chart-<name> → <name>); the figure is a JSON string.
(function () {
  "use strict";
  document.querySelectorAll(".chart").forEach(element => {
    const source = document.getElementById(element.id.replace("chart-", ""));
    if (!source) { return; }
    const figure = JSON.parse(JSON.parse(source.textContent));
    Plotly.newPlot(element, figure.data, figure.layout, {responsive: true, displaylogo: false});
  });
})();
