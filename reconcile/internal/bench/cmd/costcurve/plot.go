package main

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// memoryTarget is issue 15's target for framework memory per object
// beyond the cached object, drawn as a dashed line on the memory panel.
const memoryTarget = 300

const (
	panelW, panelH                     = 640, 480
	marginL, marginR, marginT, marginB = 80, 20, 50, 60
)

var (
	white = color.RGBA{255, 255, 255, 255}
	black = color.RGBA{0, 0, 0, 255}
	grid  = color.RGBA{225, 225, 225, 255}
	red   = color.RGBA{200, 0, 0, 255}
	// lineColors is indexed like the implementations' names.
	lineColors = []color.RGBA{
		{128, 128, 128, 255}, // store-only
		{31, 119, 180, 255},  // converge
		{255, 127, 14, 255},  // client-go
		{44, 160, 44, 255},   // ctrl-runtime
		{148, 103, 189, 255},
		{140, 86, 75, 255},
	}
)

// series is one line of a panel: y values at the sizes of the panel.
type series struct {
	name  string
	color color.RGBA
	xs    []int
	ys    []float64
}

// panel is one chart: a title (which names the y unit), and its lines.
type panel struct {
	title  string
	lines  []series
	target float64 // drawn as a dashed line if not zero
}

// plot draws two panels side by side, time per object and framework memory
// per object beyond the cached object, each against object count on a log
// axis with one line per implementation (store-only has no memory line),
// and writes them as PNG to w.
func plot(w io.Writer, rows []row, impls []string) error {
	if len(rows) == 0 {
		return errors.New("nothing to plot")
	}
	timeP := panel{title: "settle time per object (us)"}
	memP := panel{title: "framework memory per object beyond the cached object, idle (B)", target: memoryTarget}
	for i, name := range impls {
		c := lineColors[i%len(lineColors)]
		ts := series{name: name, color: c}
		ms := series{name: name, color: c}
		for _, r := range rows {
			if r.impl != name {
				continue
			}
			ts.xs, ts.ys = append(ts.xs, r.objects), append(ts.ys, r.nsPerObject()/1000)
			ms.xs, ms.ys = append(ms.xs, r.objects), append(ms.ys, r.idleBeyondCachedBytesPerObject())
		}
		timeP.lines = append(timeP.lines, ts)
		if name != storeOnly {
			memP.lines = append(memP.lines, ms)
		}
	}
	img := image.NewRGBA(image.Rect(0, 0, 2*panelW, panelH))
	draw.Draw(img, img.Bounds(), image.NewUniform(white), image.Point{}, draw.Src)
	drawPanel(img, image.Rect(0, 0, panelW, panelH), timeP)
	drawPanel(img, image.Rect(panelW, 0, 2*panelW, panelH), memP)
	return png.Encode(w, img)
}

// drawPanel draws p into the rectangle r of img.
func drawPanel(img *image.RGBA, r image.Rectangle, p panel) {
	area := image.Rect(r.Min.X+marginL, r.Min.Y+marginT, r.Max.X-marginR, r.Max.Y-marginB)
	var sizes []int
	lo, hi := 0.0, p.target
	for _, s := range p.lines {
		for i, y := range s.ys {
			lo, hi = math.Min(lo, y), math.Max(hi, y)
			sizes = appendUnique(sizes, s.xs[i])
		}
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	for _, n := range sizes {
		minX, maxX = math.Min(minX, math.Log10(float64(n))), math.Max(maxX, math.Log10(float64(n)))
	}
	minX, maxX = minX-0.25, maxX+0.25
	step := niceStep((hi - lo) / 5)
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi*1.05/step)*step
	if hi <= lo {
		hi = lo + step
	}
	px := func(n int) int {
		return area.Min.X + int(math.Round((math.Log10(float64(n))-minX)/(maxX-minX)*float64(area.Dx())))
	}
	py := func(y float64) int {
		return area.Max.Y - int(math.Round((y-lo)/(hi-lo)*float64(area.Dy())))
	}

	// Grid, ticks and tick labels.
	for y := lo; y <= hi+step/2; y += step {
		hline(img, area.Min.X, area.Max.X, py(y), grid, 1)
		label := fmt.Sprintf("%g", y)
		text(img, area.Min.X-8-7*len(label), py(y)+4, label, black)
	}
	for _, n := range sizes {
		vline(img, px(n), area.Min.Y, area.Max.Y, grid)
		label := sizeLabel(n)
		text(img, px(n)-7*len(label)/2, area.Max.Y+18, label, black)
	}
	// Axes and labels.
	hline(img, area.Min.X, area.Max.X, area.Max.Y, black, 1)
	vline(img, area.Min.X, area.Min.Y, area.Max.Y, black)
	text(img, r.Min.X+10, r.Min.Y+22, p.title, black)
	xl := "objects in the store (log scale)"
	text(img, area.Min.X+(area.Dx()-7*len(xl))/2, area.Max.Y+42, xl, black)

	if p.target != 0 {
		y := py(p.target)
		for x := area.Min.X; x < area.Max.X; x += 12 {
			hline(img, x, min(x+6, area.Max.X), y, red, 1)
		}
		text(img, area.Max.X-7*len("target")-4, y-6, "target", red)
	}
	for _, s := range p.lines {
		for i := range s.xs {
			x, y := px(s.xs[i]), py(s.ys[i])
			fill(img, image.Rect(x-3, y-3, x+4, y+4), s.color)
			if i > 0 {
				line(img, px(s.xs[i-1]), py(s.ys[i-1]), x, y, s.color)
			}
		}
	}
	// Legend, top left inside the plot area.
	lx, ly := area.Min.X+12, area.Min.Y+8
	for i, s := range p.lines {
		y := ly + 16*i
		fill(img, image.Rect(lx, y+3, lx+20, y+6), s.color)
		text(img, lx+26, y+10, s.name, black)
	}
}

func appendUnique(xs []int, x int) []int {
	for _, y := range xs {
		if y == x {
			return xs
		}
	}
	return append(xs, x)
}

// niceStep rounds x up to 1, 2 or 5 times a power of ten.
func niceStep(x float64) float64 {
	if x <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

// sizeLabel writes n as 10k, 1M, 2500 and so on.
func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

func fill(img *image.RGBA, r image.Rectangle, c color.Color) {
	draw.Draw(img, r, image.NewUniform(c), image.Point{}, draw.Src)
}

func hline(img *image.RGBA, x0, x1, y int, c color.Color, width int) {
	fill(img, image.Rect(x0, y, x1+1, y+width), c)
}

func vline(img *image.RGBA, x, y0, y1 int, c color.Color) {
	fill(img, image.Rect(x, y0, x+1, y1+1), c)
}

// line draws a line two pixels wide from (x0, y0) to (x1, y1).
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	steps := max(abs(x1-x0), abs(y1-y0), 1)
	for i := 0; i <= steps; i++ {
		x := x0 + (x1-x0)*i/steps
		y := y0 + (y1-y0)*i/steps
		fill(img, image.Rect(x-1, y-1, x+1, y+1), c)
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
