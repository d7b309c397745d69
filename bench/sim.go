package main

import "errors"

func benchSim(env Env) (Row, error) { return Row{}, errors.New("not written yet") }
