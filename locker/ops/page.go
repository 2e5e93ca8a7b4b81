package ops

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
)

// assets are the page's template, style and script: all embedded, so the
// page needs nothing from the network.
//
//go:embed assets/page.html assets/ops.css assets/ops.js
var assets embed.FS

var pageTemplate = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"leaseLeft": leaseLeft,
	"duration":  duration,
	"short":     short,
	"more":      moreWaiters,
}).ParseFS(assets, "assets/page.html"))

// pageData is what page.html renders.
type pageData struct {
	*Page
	Error     string
	NextURL   string
	RefreshMs int64
	ReadOnly  bool
}

func (h *handler) servePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := pageData{RefreshMs: h.o.refresh.Milliseconds(), ReadOnly: h.o.authorize == nil}
	status := http.StatusOK
	p, err := h.page(r.Context(), q.Get("prefix"), q.Get("cursor"), pageWaiters)
	if err != nil {
		// The status and message the API would answer, on the page.
		status, d.Error = lockerStatus(err)
		p = &Page{Prefix: q.Get("prefix"), Locks: []Lock{}, Redacted: h.o.redact != nil, Locker: h.lk.ID(), Risks: h.lk.Risks()}
	}
	h.markReleasable(r, p)
	d.Page = p
	if p.Next != "" {
		d.NextURL = "?" + url.Values{"prefix": {p.Prefix}, "cursor": {p.Next}}.Encode()
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, d); err != nil {
		writeError(w, http.StatusInternalServerError, "ops: page template: "+err.Error())
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	// Only our own embedded files; no framing (the release button must
	// not be clickjacked); forms and fetches go back to this origin only.
	hd.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func serveAsset(w http.ResponseWriter, name, contentType string) {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		writeError(w, http.StatusNotFound, "no such asset")
		return
	}
	w.Header().Set("Content-Type", contentType)
	_, _ = w.Write(b)
}
