// Leaderboard: sort by any column, choose family (scope) and budget, filter by method kind.
// Case pages: choose the budget whose traces are shown. No dependencies; works from file://.
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    const raw = row.cells[index].dataset.value;
    if (!numeric) return (raw || row.cells[index].textContent).trim().toLowerCase();
    const value = parseFloat(raw);
    return Number.isNaN(value) ? -Infinity : value;
  }

  function sortTable(table, th) {
    const index = Array.from(th.parentNode.children).indexOf(th);
    const numeric = th.dataset.sort === "num";
    const ascending = th.getAttribute("aria-sort") === "descending" || (!th.hasAttribute("aria-sort") && !numeric);
    const body = table.tBodies[0];
    const rows = Array.from(body.rows);
    rows.sort(function (a, b) {
      const x = cellValue(a, index, numeric), y = cellValue(b, index, numeric);
      return (x < y ? -1 : x > y ? 1 : 0) * (ascending ? 1 : -1);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    th.parentNode.querySelectorAll("th").forEach(function (h) { h.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  }

  document.querySelectorAll("table.board th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () { sortTable(th.closest("table"), th); });
  });

  const scope = document.getElementById("scope");
  const budget = document.getElementById("budget");
  function applyKinds() {
    const on = new Set(Array.from(document.querySelectorAll(".kind-filter:checked")).map(function (c) { return c.value; }));
    document.querySelectorAll("table.board tbody tr").forEach(function (r) { r.hidden = !on.has(r.dataset.kind); });
  }
  function showBoard() {
    if (!scope || !budget) return;
    document.querySelectorAll("table.board").forEach(function (t) {
      t.hidden = !(t.dataset.scope === scope.value && t.dataset.budget === budget.value);
    });
    applyKinds();
    history.replaceState(null, "", "#scope=" + encodeURIComponent(scope.value) + "&budget=" + budget.value);
  }
  if (scope && budget) {
    const params = new URLSearchParams(location.hash.slice(1));
    if (params.get("scope")) scope.value = params.get("scope");
    if (params.get("budget")) budget.value = params.get("budget");
    scope.addEventListener("change", showBoard);
    budget.addEventListener("change", showBoard);
    document.querySelectorAll(".kind-filter").forEach(function (c) { c.addEventListener("change", applyKinds); });
    showBoard();
  }

  const traceBudget = document.getElementById("trace-budget");
  if (traceBudget) {
    const showTraces = function () {
      document.querySelectorAll("tr.trace").forEach(function (r) { r.hidden = r.dataset.budget !== traceBudget.value; });
    };
    traceBudget.addEventListener("change", showTraces);
    showTraces();
  }
})();
