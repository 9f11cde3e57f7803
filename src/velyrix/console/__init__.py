"""The web console: server-rendered pages (Jinja2, ``templates/``) in the control plane's FastAPI app,
read through the same scoped queries as the API and acting through the same route code with the user's
browser session (docs/console.md). ``routes.router`` is mounted by the composition root
(``velyrix.ops.service``); ``install`` adds the HTML answer to refusals on console paths."""
