# calc.sh: shell arithmetic, sourced by its users and tests.
add() { echo $(($1 + $2)); }
