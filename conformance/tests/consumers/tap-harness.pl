# Reads a TAP file with TAP::Parser (the parser behind Perl's prove) and prints what it
# counted as one JSON line. Usage: perl tap-harness.pl FILE
use strict;
use warnings;
use TAP::Parser;
use JSON::PP;

my $parser = TAP::Parser->new({ source => $ARGV[0] });
my %messages;
my $last;
while (my $result = $parser->next) {
    if ($result->is_test) {
        $last = $result->number;
    } elsif ($result->is_yaml && defined $last) {
        my $data = $result->data;
        $messages{$last} = $data->{message} if ref $data eq 'HASH' && defined $data->{message};
    }
}
print JSON::PP->new->canonical->encode({
    tests_run      => $parser->tests_run + 0,
    passed         => scalar($parser->passed),
    failed         => scalar($parser->failed),
    todo           => scalar($parser->todo),
    skipped        => scalar($parser->skipped),
    failed_numbers => [ map { $_ + 0 } $parser->failed ],
    parse_errors   => [ $parser->parse_errors ],
    messages       => \%messages,
}), "\n";
