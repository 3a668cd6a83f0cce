// The widget manager (ipywidgets 8) typesets labels through MathJax 2's API, MathJax.Hub.Queue;
// the bundled MathJax is version 3. Map the one call it makes onto MathJax 3's typesetPromise.
(function () {
  if (window.MathJax && window.MathJax.typesetPromise && !window.MathJax.Hub) {
    window.MathJax.Hub = {
      Queue: function (job) {
        var element = Array.isArray(job) ? job[2] : undefined;
        return window.MathJax.typesetPromise(element ? [element] : undefined);
      },
    };
  }
})();
