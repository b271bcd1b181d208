package app

// RenderStatus prints a status for people, as `status` does.
var RenderStatus = renderStatus
