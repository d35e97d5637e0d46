// Leaderboard: choose the scope (all tasks or one) and the view (headline or one budget), sort any table by a
// column, filter rows by method kind. Case pages: choose the budget whose traces are shown.
// No dependencies and no requests: works from file://.
(function () {
  "use strict";

  function cellValue(row, index, numeric) {
    const cell = row.cells[index];
    const raw = cell.dataset.value;
    if (!numeric) return (raw || cell.textContent).trim().toLowerCase();
    const value = parseFloat(raw);
    return Number.isNaN(value) ? -Infinity : value;
  }

  // Numeric columns sort best (largest) first, text and rank columns A-Z / 1-n first; a second click flips.
  function sortTable(table, th) {
    const index = Array.from(th.parentNode.children).indexOf(th);
    const numeric = th.dataset.sort === "num";
    const firstAscending = !numeric || th.dataset.first === "asc";
    const current = th.getAttribute("aria-sort");
    const ascending = current ? current === "descending" : firstAscending;
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

  document.querySelectorAll("table.sortable th[data-sort]").forEach(function (th) {
    th.addEventListener("click", function () { sortTable(th.closest("table"), th); });
  });

  function applyKinds() {
    const boxes = document.querySelectorAll(".kind-filter");
    if (!boxes.length) return;
    const on = new Set(Array.from(boxes).filter(function (c) { return c.checked; }).map(function (c) { return c.value; }));
    document.querySelectorAll("section.board tbody tr").forEach(function (r) { r.hidden = !on.has(r.dataset.kind); });
  }
  document.querySelectorAll(".kind-filter").forEach(function (c) { c.addEventListener("change", applyKinds); });

  const scope = document.getElementById("scope");
  const view = document.getElementById("view");
  function showBoard() {
    document.querySelectorAll("section.board").forEach(function (s) {
      s.hidden = !(s.dataset.scope === scope.value && s.dataset.view === view.value);
    });
    applyKinds();
    history.replaceState(null, "", "#scope=" + encodeURIComponent(scope.value) + "&view=" + encodeURIComponent(view.value));
  }
  // A link such as index.html#scope=alpha&view=64 opens that board, on load and when the hash changes.
  function fromHash() {
    const params = new URLSearchParams(location.hash.slice(1));
    const has = function (select, value) { return Array.from(select.options).some(function (o) { return o.value === value; }); };
    if (params.get("scope") && has(scope, params.get("scope"))) scope.value = params.get("scope");
    if (params.get("view") && has(view, params.get("view"))) view.value = params.get("view");
    showBoard();
  }
  if (scope && view) {
    scope.addEventListener("change", showBoard);
    view.addEventListener("change", showBoard);
    window.addEventListener("hashchange", fromHash);
    fromHash();
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
