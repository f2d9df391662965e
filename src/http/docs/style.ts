// The docs pages' stylesheet, served at `/docs/docs.css` (the pages' Content-Security-Policy allows
// no inline style).
export const DOCS_STYLESHEET = `
:root { color-scheme: light dark; --accent: #0b6bcb; --muted: #6b7280; --line: #d0d7de; --code: rgba(127,127,127,.12); }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans Arabic", sans-serif; }
header { position: sticky; top: 0; background: Canvas; border-bottom: 1px solid var(--line); padding: .6rem 1.5rem; z-index: 1; }
header nav a { margin-inline-end: 1.25rem; color: var(--accent); text-decoration: none; font-weight: 600; }
main { max-width: 60rem; margin: 0 auto; padding: 1rem 1.5rem 4rem; }
h1, h2, h3, h4 { line-height: 1.25; }
[id] { scroll-margin-top: 4rem; }
h2 { margin-top: 2.5rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; }
a { color: var(--accent); }
code { font: .9em/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: var(--code); padding: .1em .3em; border-radius: 4px; }
pre { background: var(--code); padding: .8rem 1rem; border-radius: 6px; overflow-x: auto; }
pre code { background: none; padding: 0; }
table { border-collapse: collapse; margin: 1rem 0; display: block; overflow-x: auto; }
th, td { border: 1px solid var(--line); padding: .35rem .6rem; text-align: start; vertical-align: top; }
th { background: var(--code); }
.operation { border: 1px solid var(--line); border-radius: 8px; padding: 0 1rem 1rem; margin: 1.5rem 0; }
.method { display: inline-block; min-width: 4.2em; font: 700 .8em ui-monospace, monospace; color: #fff; background: var(--muted); padding: .15em .4em; border-radius: 4px; text-align: center; }
.method-get { background: #1f7a3f; } .method-post { background: #0b6bcb; } .method-patch, .method-put { background: #9a6700; } .method-delete { background: #b42318; }
.contents ul { list-style: none; padding-inline-start: 1rem; }
img { max-width: 100%; height: auto; }
[dir="rtl"] pre, [dir="rtl"] code { direction: ltr; unicode-bidi: isolate; }
[dir="rtl"] pre { text-align: left; }
.contents li { margin: .2rem 0; }
.contents a { text-decoration: none; }
.summary { font-weight: 600; }
.auth, .meta, .media, .example-name { color: var(--muted); font-size: .9em; }
details { margin: .4rem 0; }
summary { cursor: pointer; }
.status { font-weight: 700; font-family: ui-monospace, monospace; }
dt { font-weight: 600; margin-top: .8rem; }
`;
