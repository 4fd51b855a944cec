// delaybridge console: local times, the overview's refresh and the body
// filter of a topic page. No inline script (the CSP forbids it); nothing
// here ever sends a message body anywhere.
(function () {
  'use strict';

  // localTimes writes the viewer's local time next to every UTC time.
  function localTimes(root) {
    root.querySelectorAll('[data-ms]').forEach(function (el) {
      var ms = Number(el.getAttribute('data-ms'));
      if (!ms) { return; }
      var local = new Date(ms).toLocaleString();
      if (el.classList.contains('local')) {
        el.textContent = local + ' (local)';
      } else {
        el.setAttribute('title', local + ' (local)');
      }
    });
  }

  function banner(text) {
    var b = document.getElementById('banner');
    if (!b) { return; }
    b.textContent = text;
    b.hidden = !text;
  }

  // refresh replaces the overview's live part every few seconds. While the
  // console or Redis is unreachable the numbers are removed, not left stale.
  function refresh(wrap) {
    var src = wrap.getAttribute('data-src');
    var every = Number(wrap.getAttribute('data-refresh')) || 3000;
    function tick() {
      fetch(src, { cache: 'no-store', credentials: 'same-origin' })
        .then(function (res) { return res.text(); })
        .then(function (html) {
          var doc = new DOMParser().parseFromString(html, 'text/html');
          var fresh = doc.getElementById('live');
          var old = document.getElementById('live');
          if (!fresh || !old) { throw new Error('unexpected answer'); }
          old.replaceWith(fresh);
          localTimes(fresh);
          banner('');
        })
        .catch(function () {
          var old = document.getElementById('live');
          if (old) { old.textContent = ''; }
          banner('The console is unreachable: the numbers are gone until it answers again.');
        })
        .finally(function () { setTimeout(tick, every); });
    }
    setTimeout(tick, every);
  }

  // bodyFilter hides the rows of this page whose body does not start with
  // the text typed: the filter stays in the browser.
  function bodyFilter(input) {
    input.addEventListener('input', function () {
      var prefix = input.value;
      document.querySelectorAll('#messages tbody tr[data-body]').forEach(function (tr) {
        tr.hidden = prefix !== '' && tr.getAttribute('data-body').indexOf(prefix) !== 0;
      });
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    localTimes(document);
    var wrap = document.getElementById('live-wrap');
    if (wrap) { refresh(wrap); }
    var input = document.getElementById('body-filter');
    if (input) { bodyFilter(input); }
  });
}());
