# Installs runner-manager and runner-manager-tui on Windows from a release:
#
#   irm https://raw.githubusercontent.com/runner-manager/runner-manager/main/install.ps1 | iex
#
# It downloads the release's windows_amd64 archive and SHA256SUMS, checks
# the archive's SHA-256 and installs nothing unless it matches. As an
# administrator the programs go to $env:ProgramFiles\runner-manager,
# otherwise to $env:LOCALAPPDATA\Programs\runner-manager. Parameters, or
# the variables beside them:
#
#   -Version V    RUNNER_MANAGER_VERSION      a release (1.2.3 or v1.2.3); default: the newest
#   -Dir DIR      RUNNER_MANAGER_INSTALL_DIR  where the programs go
#   -BaseUrl U    RUNNER_MANAGER_BASE_URL     where releases are published
#
# Written like install.sh; it was not run on Windows where it was written
# (docs/install.md says what was).
param(
  [string]$Version = $env:RUNNER_MANAGER_VERSION,
  [string]$Dir = $env:RUNNER_MANAGER_INSTALL_DIR,
  [string]$BaseUrl = $(if ($env:RUNNER_MANAGER_BASE_URL) { $env:RUNNER_MANAGER_BASE_URL } else { 'https://github.com/runner-manager/runner-manager/releases' })
)
$ErrorActionPreference = 'Stop'
Set-StrictMode -Version 3

function Fail([string]$msg) { Write-Error "install.ps1: $msg"; exit 1 }

$arch = $env:PROCESSOR_ARCHITECTURE
if ($env:PROCESSOR_ARCHITEW6432) { $arch = $env:PROCESSOR_ARCHITEW6432 }
if ($arch -ne 'AMD64') { Fail "no release is built for Windows on $arch CPUs (only amd64)" }

$BaseUrl = $BaseUrl.TrimEnd('/')
if ($Version) {
  $tag = if ($Version.StartsWith('v')) { $Version } else { "v$Version" }
  if ($tag -notmatch '^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$') { Fail "$Version is not a release version (1.2.3 or v1.2.3)" }
  $url = "$BaseUrl/download/$tag"
} else {
  $url = "$BaseUrl/latest/download"
}

if (-not $Dir) {
  $admin = ([Security.Principal.WindowsPrincipal][Security.Principal.WindowsIdentity]::GetCurrent()).IsInRole([Security.Principal.WindowsBuiltInRole]::Administrator)
  $Dir = if ($admin) { Join-Path $env:ProgramFiles 'runner-manager' } else { Join-Path $env:LOCALAPPDATA 'Programs\runner-manager' }
}

$tmp = Join-Path ([IO.Path]::GetTempPath()) ("runner-manager-" + [Guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
  $ProgressPreference = 'SilentlyContinue'
  try { Invoke-WebRequest -UseBasicParsing -Uri "$url/SHA256SUMS" -OutFile "$tmp\SHA256SUMS" } catch { Fail "could not download $url/SHA256SUMS: $_" }
  $lines = Get-Content "$tmp\SHA256SUMS" | Where-Object { $_ -match '^([0-9a-fA-F]{64}) +\*?(runner-manager_[0-9][0-9A-Za-z.-]*_windows_amd64\.zip)$' }
  if (-not $lines) { Fail "the release at $url lists no archive for windows/amd64 in SHA256SUMS" }
  if (@($lines).Count -gt 1) { Fail "SHA256SUMS lists more than one archive for windows/amd64" }
  $null = $lines -match '^([0-9a-fA-F]{64}) +\*?(\S+)$'
  $want = $Matches[1].ToLower(); $archive = $Matches[2]
  if ($Version -and $archive -ne "runner-manager_$($tag.Substring(1))_windows_amd64.zip") { Fail "the SHA256SUMS of $tag names $archive" }

  try { Invoke-WebRequest -UseBasicParsing -Uri "$url/$archive" -OutFile "$tmp\$archive" } catch { Fail "could not download $url/${archive}: $_" }
  $got = (Get-FileHash -Algorithm SHA256 "$tmp\$archive").Hash.ToLower()
  if ($got -ne $want) { Fail "$archive has SHA-256 $got but SHA256SUMS says ${want}: refusing it, nothing installed" }

  Expand-Archive -Path "$tmp\$archive" -DestinationPath "$tmp\x"
  foreach ($p in 'runner-manager.exe', 'runner-manager-tui.exe') {
    if (-not (Test-Path "$tmp\x\$p")) { Fail "$archive holds no ${p}: nothing installed" }
  }
  New-Item -ItemType Directory -Force -Path $Dir | Out-Null
  foreach ($p in 'runner-manager.exe', 'runner-manager-tui.exe') {
    $dest = Join-Path $Dir $p
    # A running program cannot be overwritten, but it can be moved aside.
    if (Test-Path $dest) { Move-Item -Force $dest "$dest.old" }
    Move-Item "$tmp\x\$p" $dest
  }
} finally {
  Remove-Item -Recurse -Force $tmp -ErrorAction SilentlyContinue
}

$installed = ($archive -replace '^runner-manager_', '') -replace '_windows_amd64\.zip$', ''
Write-Output "installed runner-manager $installed to $Dir (runner-manager.exe, runner-manager-tui.exe)"
if (-not (($env:Path -split ';') -contains $Dir)) {
  Write-Output "Put it on your PATH (run this once, then open a new terminal):"
  Write-Output "  [Environment]::SetEnvironmentVariable('Path', `"$Dir;`$([Environment]::GetEnvironmentVariable('Path', 'User'))`", 'User')"
}
