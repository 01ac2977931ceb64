# Starts the hub with systemd's notify socket already connected (hub/README.md, "Watchdog and
# service"): ExecStart=/usr/bin/perl <this file> /usr/bin/node … hub …
#
# Why a wrapper: sd_notify is a datagram to the AF_UNIX socket named by $NOTIFY_SOCKET, and Node
# cannot open a datagram socket on a path (node:dgram is UDP only, node:net is streams only). A
# child that sends for the hub (systemd-notify, a helper) sends under its own PID, which
# NotifyAccess=main rejects. So this opens and connects the socket, leaves it open across exec,
# and execs the hub in the same process: same PID (systemd's main PID, $WATCHDOG_PID), and the
# hub writes each message to the inherited descriptor (a write on a connected datagram socket is
# one datagram, credited by the kernel to the process that writes it). perl-base is Essential on
# Debian and Raspberry Pi OS, so nothing is installed for it.
#
# The descriptor's number goes to the hub in SVC_NOTIFY_FD; NOTIFY_SOCKET is taken out of the
# environment, so no program the hub starts takes the hub's messages for its own.
use strict;
use warnings;
use Socket qw(AF_UNIX SOCK_DGRAM pack_sockaddr_un);
use Fcntl qw(F_GETFL F_SETFL F_SETFD O_NONBLOCK);

@ARGV or die "usage: perl notify-socket.pl PROGRAM [ARG]...\n";
my $addr = delete $ENV{NOTIFY_SOCKET};
delete $ENV{SVC_NOTIFY_FD};
if (defined $addr && $addr ne '') {
  my $name = $addr;
  # An abstract socket (Linux): '@' stands for the leading NUL byte.
  $name =~ s/^@/\0/;
  socket(my $sock, AF_UNIX, SOCK_DGRAM, 0) or die "notify-socket: socket: $!\n";
  connect($sock, pack_sockaddr_un($name)) or die "notify-socket: cannot connect to NOTIFY_SOCKET=$addr: $!\n";
  # Kept open across exec; non-blocking, so a manager that stops reading can never stall the hub.
  fcntl($sock, F_SETFD, 0) or die "notify-socket: fcntl: $!\n";
  my $flags = fcntl($sock, F_GETFL, 0) or die "notify-socket: fcntl: $!\n";
  fcntl($sock, F_SETFL, $flags | O_NONBLOCK) or die "notify-socket: fcntl: $!\n";
  $ENV{SVC_NOTIFY_FD} = fileno($sock);
  # Held in a global so perl does not close it before the exec.
  our $KEEP = $sock;
}
{ no warnings 'exec'; exec { $ARGV[0] } @ARGV }
die "notify-socket: cannot run $ARGV[0]: $!\n";
