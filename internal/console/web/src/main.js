// The consoles' front end: htmx for forms and partial swaps, and small
// modules that attach to markup by data- attributes (live transcript,
// watch-driven refresh, terminal, charts). Pages work without it (plain
// forms); it adds the live parts.
import htmx from "htmx.org";
import { startLive } from "./live.js";
import { startTerminals } from "./terminal.js";
import { startCharts } from "./chart.js";
import "./console.css";

window.htmx = htmx;
// Swapped-in HTML never runs script (the CSP forbids inline script as well).
htmx.config.allowScriptTags = false;
htmx.config.allowEval = false;

function csrfToken() {
  const m = document.querySelector('meta[name="csrf-token"]');
  return m ? m.content : "";
}

// Every htmx request carries the session's CSRF token.
document.addEventListener("htmx:configRequest", (e) => {
  e.detail.headers["X-CSRF-Token"] = csrfToken();
});

// A failed request shows the server's message, never a blank page.
document.addEventListener("htmx:responseError", (e) => {
  const xhr = e.detail.xhr;
  showError(xhr.responseText || `${xhr.status} ${xhr.statusText}`);
});
// A form marked data-reset-on-success is cleared once its request succeeded (the send box).
document.addEventListener("htmx:afterRequest", (e) => {
  const form = e.detail.elt;
  if (e.detail.successful && form && form.matches && form.matches("form[data-reset-on-success]")) form.reset();
});
// Enter sends a textarea marked data-enter-submits (Shift+Enter: a new line).
document.addEventListener("keydown", (e) => {
  const t = e.target;
  if (e.key !== "Enter" || e.shiftKey || e.isComposing || !t.matches || !t.matches("textarea[data-enter-submits]")) return;
  e.preventDefault();
  if (t.value.trim() !== "" && t.form) t.form.requestSubmit();
});
document.addEventListener("htmx:sendError", () => showError("the console is unreachable: check that aicli-console runs"));

export function showError(text) {
  const box = document.getElementById("errors");
  if (!box) return;
  const p = document.createElement("p");
  p.className = "error";
  p.setAttribute("role", "alert");
  // Server errors may be HTML pages: show their text only.
  p.textContent = text.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim().slice(0, 600);
  box.replaceChildren(p);
}

function start(root) {
  startLive(root, { csrfToken, showError });
  startTerminals(root, { showError });
  startCharts(root);
}

document.addEventListener("DOMContentLoaded", () => start(document));
document.addEventListener("htmx:load", (e) => start(e.detail.elt));
