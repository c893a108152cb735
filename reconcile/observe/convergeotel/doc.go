// Package convergeotel traces converge's reconciles with OpenTelemetry.
package convergeotel
